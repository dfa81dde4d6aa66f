"""Energy in a study's results: joules per run and per event with CIs, node watts, and the copy
count that costs the least energy per event (it differs from the fastest one when turbo or SMT
buys throughput at a higher price in watts)."""

from __future__ import annotations

import re
from typing import NamedTuple, Sequence

from perflab.model import MetricPattern, RunResult
from perflab.stats import CI, median, median_ci


def run_joules(result: RunResult) -> float | None:
    """A run's energy: the node meter where present (it covers everything), else RAPL's packages
    plus DRAM (sub-domains such as core are inside their package and not added again)."""
    e = result.energy or {}
    if "ipmi:node" in e:
        return float(e["ipmi:node"])
    # psys (client platforms) already contains the packages: adding it would count them twice.
    tops = [v for k, v in e.items()
            if (k.count("/") == 0 or k.endswith("/dram")) and not k.endswith("psys")]
    return float(sum(tops)) if tops else None


def source_of(results: Sequence[RunResult]) -> str | None:
    """'node meter', 'RAPL' or 'perf' (both of the latter undercount the node), or None."""
    keys = {k for r in results for k in (r.energy or {})}
    if any(k.startswith("ipmi:") for k in keys):
        return "node meter (IPMI DCMI)"
    if any(k.startswith("rapl:") for k in keys):
        return "RAPL (CPU packages and DRAM; undercounts the node)"
    if any(k.startswith("perf:") for k in keys):
        return "perf power events (CPU and DRAM; undercounts the node)"
    return None


# A NamedTuple, not a frozen dataclass: `perflab run` loads this module to summarise energy where
# it was measured, and a frozen dataclass costs ten times as much to define (~0.5 ms).
class EnergySummary(NamedTuple):
    """Joules per run and per event (median, with an interval and its level), average watts."""

    source: str
    n: int
    joules_per_run: CI
    joules_per_run_median: float
    watts: float
    joules_per_event: CI | None = None
    joules_per_event_median: float | None = None

    def as_dict(self) -> dict:
        d = {"source": self.source, "n": self.n, "joules_per_run": self.joules_per_run_median,
             "joules_per_run_ci": self.joules_per_run.as_dict(), "watts": self.watts}
        if self.joules_per_event is not None:
            d["joules_per_event"] = self.joules_per_event_median
            d["joules_per_event_ci"] = self.joules_per_event.as_dict()
        return d


def summarise(results: Sequence[RunResult], events_metric: str | None = None,
              level: float = 0.95) -> EnergySummary | None:
    """Energy of a set of runs of one configuration (None when none was measured)."""
    runs = [(r, j) for r in results if r.ok and (j := run_joules(r)) is not None]
    if not runs:
        return None
    joules = [j for _, j in runs]
    seconds = sum(r.wall_s for r, _ in runs)
    per_event = [j / r.metrics[events_metric] for r, j in runs
                 if events_metric and r.metrics.get(events_metric, 0) > 0]
    return EnergySummary(
        source=source_of([r for r, _ in runs]) or "", n=len(runs),
        joules_per_run=median_ci(joules, level), joules_per_run_median=median(joules),
        watts=sum(joules) / seconds if seconds > 0 else float("nan"),
        joules_per_event=median_ci(per_event, level) if per_event else None,
        joules_per_event_median=median(per_event) if per_event else None,
    )


def events_metric(metrics: Sequence[MetricPattern], primary: str | None = None) -> str | None:
    """The metric counting a run's work, for joules per event: the base of a '<x>_per_s' primary
    rate when a pattern captures <x> ('events' of 'events_per_s'), else a metric named 'events'."""
    groups = {name for m in metrics for name in _groups(m.regex)}
    base = primary[: -len("_per_s")] if primary and primary.endswith("_per_s") else None
    if base and base in groups:
        return base
    return "events" if "events" in groups else None


def _groups(regex: str) -> list[str]:
    try:
        return list(re.compile(regex).groupindex)
    except re.error:
        return []


def energy_optimal(points: dict[int, tuple[float, float]]) -> int | None:
    """The copy count with the fewest joules per unit of work: {n: (work per s, watts)}."""
    cost = {n: w / t for n, (t, w) in points.items() if t > 0 and w > 0}
    return min(cost, key=lambda n: (cost[n], n)) if cost else None
