"""The primary metric and the per-event series of a command: ``--primary-metric NAME``,
``--higher-is-better`` / ``--lower-is-better``, ``--series REGEX``, ``--skip-events K``: one
MetricChoice a command receives and applies to its workload (``resolve_target``)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

import click

from perflab.errors import PerflabError
from perflab.measure.series import SERIES_METRICS, SERIES_RANKED, compile_series

# ---- the primary metric: --primary-metric NAME, --higher-is-better / --lower-is-better ----------

@dataclass(frozen=True)
class MetricChoice:
    """What the command line said about the primary metric (None: keep the workload's)."""

    name: str | None = None
    higher_is_better: bool | None = None
    series: tuple[str, ...] = ()  # --series REGEX: per-event lines (measure/series.py)
    skip_events: int | None = None  # --skip-events K: the warm-up as a count, not a change point

    def apply(self, workload: Any, extra_metrics: Sequence[Any] = ()) -> Any:
        """The workload with these choices over its perflab.toml ones; a NAME that none of its
        metric regexes (nor ``extra_metrics``) captures is refused before anything runs."""

        if self.series or self.skip_events is not None:
            series = tuple(workload.series) + compile_series(self.series)
            if not series:
                raise PerflabError("--skip-events cuts a per-event series: give --series REGEX too "
                                   r"(e.g. 'event (?P<event>\d+) done in (?P<ms>[\d.]+) ms')")
            workload = replace(workload, series=series, skip_events=self.skip_events)
        if self.name is None and self.higher_is_better is None:
            return workload
        changes: dict[str, object] = {}
        if self.name in SERIES_METRICS and not workload.series:
            raise PerflabError(f"--primary-metric {self.name} comes from a per-event series, which "
                               f"'{workload.name}' does not declare: give --series REGEX")
        if self.name in SERIES_METRICS and self.name != workload.primary_metric:
            if self.name not in SERIES_RANKED:
                raise PerflabError(f"--primary-metric {self.name} is not a measure to rank by: give one of "
                                   + ", ".join(SERIES_RANKED))
            higher, unit = SERIES_RANKED[self.name]
            changes.update(primary_metric=self.name, higher_is_better=higher, unit=unit)
        elif self.name is not None and self.name != workload.primary_metric:
            names = list(workload.metric_names())
            for m in extra_metrics:
                names.extend(re.compile(m.regex).groupindex)
            if self.name not in names:
                have = f"its metrics are {', '.join(names)}" if names else "it has no metric regex"
                raise PerflabError(
                    f"--primary-metric {self.name}: no metric of '{workload.name}' is named {self.name} "
                    f"({have}): add a regex with (?P<{self.name}>...) (--metric or metrics in perflab.toml)")
            changes.update(primary_metric=self.name, unit=None)
        if self.higher_is_better is not None:
            if self.name is None and workload.primary_metric is None:
                flag = "--higher-is-better" if self.higher_is_better else "--lower-is-better"
                raise PerflabError(f"{flag} needs a metric: give --primary-metric NAME (or primary_metric "
                                   "in perflab.toml); wall time is always lower-is-better")
            changes["higher_is_better"] = self.higher_is_better
        return replace(workload, **changes)


def _metric_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None and not re.fullmatch(r"[A-Za-z_]\w*", value):
        raise click.BadParameter(f"{value!r} is not a metric name: give the name of a regex's "
                                 "(?P<name>...) group, e.g. events_per_s", ctx, param)
    return value


def primary_metric_options(f: Callable) -> Callable:
    """``--primary-metric NAME``, ``--higher-is-better`` / ``--lower-is-better``, ``--series REGEX``
    and ``--skip-events K``: override the workload's primary metric, direction and series. The
    command receives them as one ``metric`` argument, a MetricChoice, which it hands to
    ``resolve_target`` (or applies itself)."""

    @functools.wraps(f)
    def command(*args: Any, primary_metric: str | None = None, higher_is_better: bool | None = None,
                series: Sequence[str] = (), skip_events: int | None = None, **kwargs: Any) -> Any:
        metric = MetricChoice(primary_metric, higher_is_better, tuple(series), skip_events)
        return f(*args, metric=metric, **kwargs)

    g = click.option("--higher-is-better/--lower-is-better", "higher_is_better", default=None,
                     help="Direction of the primary metric (default: the workload's, else higher).")(command)
    g = click.option("--series", "series", metavar="REGEX", multiple=True,
                     help="Per-event output lines: a regex naming (?P<event>...) and the event's time "
                          "(?P<ms>...), (?P<s>...) or (?P<us>...), or a progress (?P<count>...); gives "
                          "steady_rate, warm-up and per-event tail metrics.")(g)
    g = click.option("--skip-events", "skip_events", type=click.IntRange(0), metavar="K",
                     help="Take the first K events of each run as its warm-up (default: found by a "
                          "change point in the event times).")(g)
    return click.option("--primary-metric", "primary_metric", metavar="NAME", callback=_metric_name,
                        help="Rank and compare by this metric (a named group of a metric regex) "
                             "instead of the workload's primary_metric or wall time.")(g)
