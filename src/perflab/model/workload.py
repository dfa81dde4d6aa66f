"""A named workload: its command, the metrics that describe its throughput, its build recipe."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from perflab.model import MetricPattern, RunSpec


@dataclass(frozen=True)
class BuildRecipe:
    """How to build a workload from sources (perflab.toml [workload.NAME.build])."""

    sources: tuple[str, ...]
    language: str = "c++"  # "c" or "c++"
    cflags: tuple[str, ...] = ("-O2",)
    ldflags: tuple[str, ...] = ()
    output: str = ""  # binary name; defaults to the workload name


@dataclass(frozen=True)
class Workload:
    """A named (or ad-hoc) command with the metrics that describe its throughput.

    ``primary_metric`` names the metric studies rank by (e.g. ``events_per_s``);
    ``higher_is_better`` says which direction is good; ``unit`` is how to print it (e.g.
    ``events/s``). Without a metric, studies use wall time.
    """

    name: str
    argv: tuple[str, ...]
    metrics: tuple[MetricPattern, ...] = ()
    primary_metric: str | None = None
    higher_is_better: bool = True
    unit: str | None = None
    shell: bool = False
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    build: BuildRecipe | None = None
    source: str = "command"  # "builtin", a perflab.toml path, or "command"
    # extra argv a study may add: e.g. minihlt's "--fork {n}" or "--event {k}"
    fork_arg: tuple[str, ...] | None = None  # template like ("--fork", "{n}")
    event_arg: tuple[str, ...] | None = None  # template like ("--event", "{k}")
    checksum_metric: str | None = None  # metric name holding an output checksum
    series: tuple[MetricPattern, ...] = ()  # per-event lines (measure/series.py)
    skip_events: int | None = None  # the series' warm-up as a count; None: found by a change point

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form, as stored in a campaign's config."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Workload":
        """The inverse of ``as_dict`` (lists back to tuples), for resuming a stored campaign."""
        d = dict(d)
        d["argv"] = tuple(d["argv"])
        d["metrics"] = tuple(MetricPattern(**m) for m in d.get("metrics") or ())
        d["series"] = tuple(MetricPattern(**m) for m in d.get("series") or ())
        for key in ("fork_arg", "event_arg"):
            if d.get(key) is not None:
                d[key] = tuple(d[key])
        if d.get("build"):
            b = dict(d["build"])
            fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in b.items()}
            d["build"] = BuildRecipe(**fields)
        d["env"] = dict(d.get("env") or {})
        return cls(**d)

    def metric_names(self) -> tuple[str, ...]:
        """The named groups of the workload's metric regexes, in order."""
        import re

        names: list[str] = []
        for m in self.metrics:
            names.extend(n for n in re.compile(m.regex).groupindex if n not in names)
        return tuple(names)

    def spec(self, **overrides: object) -> RunSpec:
        """A RunSpec for this workload; keyword overrides go to RunSpec fields."""
        base: dict[str, object] = dict(
            argv=self.argv,
            shell=self.shell,
            env=dict(self.env) or None,
            cwd=self.cwd,
            metrics=self.metrics,
            series=self.series,
            skip_events=self.skip_events,
            label=self.name,
        )
        base.update(overrides)
        return RunSpec(**base)  # type: ignore[arg-type]  # base holds RunSpec's fields by name
