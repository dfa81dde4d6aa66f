"""Typed configuration shared by every study: what workload to run and how.

The command line and perflab.toml both map onto these frozen dataclasses at the edge; studies
never see click objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from perflab.measure.spec import MetricPattern, RunSpec


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
    ``higher_is_better`` says which direction is good. Without a metric, studies use wall time.
    """

    name: str
    argv: tuple[str, ...]
    metrics: tuple[MetricPattern, ...] = ()
    primary_metric: str | None = None
    higher_is_better: bool = True
    shell: bool = False
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    build: BuildRecipe | None = None
    source: str = "command"  # "builtin", a perflab.toml path, or "command"
    # extra argv a study may add: e.g. minihlt's "--fork {n}" or "--event {k}"
    fork_arg: tuple[str, ...] | None = None  # template like ("--fork", "{n}")
    event_arg: tuple[str, ...] | None = None  # template like ("--event", "{k}")
    checksum_metric: str | None = None  # metric name holding an output checksum

    def spec(self, **overrides: object) -> RunSpec:
        """A RunSpec for this workload; keyword overrides go to RunSpec fields."""
        base: dict[str, object] = dict(
            argv=self.argv,
            shell=self.shell,
            env=dict(self.env) or None,
            cwd=self.cwd,
            metrics=self.metrics,
            label=self.name,
        )
        base.update(overrides)
        return RunSpec(**base)  # type: ignore[arg-type]
