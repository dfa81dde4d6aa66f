"""A command's per-event series over its runs: warm-up, steady rate, the tail, the slowest events.

Each run's series (measure/series.py) gives its steady part (warm-up cut by a change point or
``--skip-events``); across runs the steady rate pools events over time (stats.steady, runs as
clusters from three runs on), the quantiles are order-statistic intervals over the events (each
event's median over the runs where the same ids recur: the events are the sample, not the
repeats of one event), and the slowest event of each run is counted across runs, which tells a
heavy event (slowest in most runs) from a slow moment (a different one each run).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field, replace
from typing import Sequence

from perflab.measure.series import SERIES_METRICS, EventSeries, decode, steady_part
from perflab.model import MetricPattern, RunResult
from perflab.stats.shift import ratio_ci
from perflab.stats.steady import BATCHES, Warmup, batches, quantile_ci, steady_rate
from perflab.studies.base import decode as decode_result  # measure.series' decode reads a run's blob

__all__ = ["SERIES_METRICS", "SeriesSummary", "profile_target", "series_of", "summarise"]
QUANTILES = (("p50", 0.50), ("p90", 0.90), ("p99", 0.99))
DRIFT = 0.05  # a steady part whose halves differ by more (and significantly) is not steady
DRIFT_LEVEL = 0.99  # its interval: a steady job is called not steady in at most ~1 % of campaigns
DRIFT_EVENTS = 2000  # events a half in the drift interval (its cost grows as their product)
PLOT_POINTS = 120  # points of the ECDF
RATE_WINDOWS = 40  # windows of events per run in the rate-over-time plot


@dataclass
class SeriesSummary:
    """What the series of one command's runs say (the report renders it; as_dict is its JSON)."""

    runs: int
    events: float  # events per run (median)
    warmup: list[int]  # events cut from the start of each run
    warmup_how: str  # "change point", "skip" or "none"
    steady_rate: float
    steady_ci: dict | None  # {"low", "high", "level"}; None: one cluster
    clusters: str  # "runs" or "batches"
    run_rate: float  # events over wall time, median over runs (start-up included)
    quantiles: dict[str, dict] = field(default_factory=dict)  # name -> {"value", "low", "high", "level"}
    max_ms: float = math.nan
    over: str = ""  # what the quantiles are over
    slowest: list[dict] = field(default_factory=list)  # {"event", "ms", "slowest_in"}
    drift: dict | None = None  # {"ratio", "low", "high", "level"}: second half / first half rate
    from_stamps: bool = False  # event times from arrival stamps, not printed by the program
    lone_warmup: list[int] = field(default_factory=list)  # change points found in at most half the runs, not cut
    rate_over_time: list[list[list[float]]] = field(default_factory=list)  # per run [[s, events/s]]
    ecdf: list[list[float]] = field(default_factory=list)  # [[ms, share]] of the steady events

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "SeriesSummary":
        return decode_result(cls, d)

    @property
    def slows(self) -> bool:
        """The steady part's second half is slower beyond DRIFT, its interval excluding 1."""
        d = self.drift
        return bool(d and d["high"] < 1 and d["ratio"] < 1 - DRIFT)

    @property
    def speeds_up(self) -> bool:
        d = self.drift
        return bool(d and d["low"] > 1 and d["ratio"] > 1 + DRIFT)


def series_of(results: Sequence[RunResult], skip_events: int | None = None) -> dict | None:
    """``summarise`` over the successful runs among ``results``, as the result's JSON (None: no series)."""
    ok = [r for r in results if r.ok]
    found = summarise([r.series for r in ok], [r.wall_s for r in ok], skip_events)
    return found.as_dict() if found is not None else None


def profile_target(workload: str | None, series: Sequence[MetricPattern]) -> str | None:
    """The workload whose events `perflab profile --event N` can window: one whose series is the
    "done processing event #N" line (the profile's window opens on "start processing event #N")."""
    return workload if workload and any("processing event #" in p.regex for p in series) else None


def summarise(blobs: Sequence[bytes], walls: Sequence[float], skip_events: int | None = None,
              level: float = 0.95) -> SeriesSummary | None:
    """The series of one command's successful runs (their blobs and wall seconds), or None."""
    runs = [(decode(b), w) for b, w in zip(blobs, walls) if b]
    found_parts = [(s, w, steady_part(s, skip_events, seed=i)) for i, (s, w) in enumerate(runs)]
    parts = [(s, w, p) for s, w, p in found_parts if p is not None]
    if not parts:
        return None
    found = [i for i, (_, _, p) in enumerate(parts) if p.warmup.how == "change point" and p.warmup.events]
    lone = []
    if len(parts) >= 2 and found and len(found) * 2 <= len(parts):
        # A job's warm-up recurs in every run; a slow start in at most half of them is the machine
        # disturbing those runs (or heavy events that happen to come early): no cut there.
        lone = [parts[i][2].warmup.events for i in found]
        # The ignore: a series that gave a steady part above gives one without the skip too.
        parts = [(s, w, replace(steady_part(s, 0), warmup=Warmup(0, "none")) if i in found else p)  # type: ignore[type-var, misc]  # see above
                 for i, (s, w, p) in enumerate(parts)]
    if len(parts) >= 3:
        clusters, kind = [(p.events, p.seconds) for _, _, p in parts], "runs"
    else:
        clusters, kind = [], "batches"
        for _, _, p in parts:
            m = p.events / len(p.times)
            clusters.extend((e * m, t * m) for e, t in batches(p.times))
    rate, ci = steady_rate(clusters, level)
    hows = {p.warmup.how for _, _, p in parts}
    out = SeriesSummary(
        runs=len(parts), events=statistics.median(len(s) for s, _, _ in parts),
        warmup=[p.warmup.events for _, _, p in parts],
        warmup_how="change point" if "change point" in hows else hows.pop(),
        steady_rate=rate, steady_ci=ci.as_dict() if ci else None, clusters=kind,
        run_rate=statistics.median(len(s) / w for s, w, _ in parts if w > 0),
        from_stamps=parts[0][2].from_stamps, lone_warmup=lone,
    )
    _tail(out, [p for _, _, p in parts], level)
    out.drift = _drift([p for _, _, p in parts], DRIFT_LEVEL)
    out.rate_over_time = [_rate_over_time(s) for s, _, _ in parts]
    return out


def _tail(out: SeriesSummary, parts: list, level: float) -> None:
    """Quantiles over the events (per-id medians where ids recur across runs), slowest events."""
    by_id: dict[int, list[float]] = {}
    for p in parts:
        for i, t in zip(p.ids, p.times):
            by_id.setdefault(i, []).append(t)
    recur = len(parts) > 1 and not parts[0].from_stamps and \
        sum(len(v) > 1 for v in by_id.values()) >= 0.5 * len(by_id)
    if recur:
        sample = [statistics.median(v) for v in by_id.values()]
        out.over = f"{len(sample)} events, each its median over the runs"
    else:
        sample = [t for p in parts for t in p.times]
        block = parts[0].block
        what = ("events" if not parts[0].from_stamps else "events (times: the gaps between arrivals)"
                if block == 1 else f"blocks of {block} events (times: the gaps between arrivals)")
        out.over = f"{len(sample)} {what} pooled over {len(parts)} run{'s' if len(parts) != 1 else ''}"
    for name, q in QUANTILES:
        value, ci = quantile_ci(sample, q, level)
        out.quantiles[name] = {"value": value, **ci.as_dict()}
    out.max_ms = max(sample)
    ordered = sorted(sample)
    step = max(1, len(ordered) // PLOT_POINTS)
    out.ecdf = [[ordered[i], (i + 1) / len(ordered)] for i in range(0, len(ordered), step)]
    if ordered and out.ecdf[-1][1] < 1:
        out.ecdf.append([ordered[-1], 1.0])
    if parts[0].from_stamps:
        return  # a block's time is no one event's: name none
    slowest: dict[int, int] = {}
    for p in parts:
        k = max(range(len(p.times)), key=p.times.__getitem__)
        slowest[p.ids[k]] = slowest.get(p.ids[k], 0) + 1
    ranked = sorted(slowest.items(), key=lambda kv: (-kv[1], -statistics.median(by_id[kv[0]])))
    out.slowest = [{"event": i, "ms": statistics.median(by_id[i]), "slowest_in": n} for i, n in ranked[:5]]


def _drift(parts: list, level: float) -> dict | None:
    """Rate of the steady part's second half over its first, as the inverse of Moses' interval
    for the ratio of their event times (stats.shift.ratio_ci): the events are the sample, so a
    fixed input whose later events happen to be heavier is not taken for a job that slows (its
    halves differ by what any two sets of its events differ by). Events are taken in order,
    each its median over the runs where ids recur; at most DRIFT_EVENTS a half (evenly spaced)."""
    by_id: dict[int, list[float]] = {}
    for p in parts:
        for i, t in zip(p.ids, p.times):
            by_id.setdefault(i, []).append(t)
    if len(parts) > 1 and not parts[0].from_stamps and sum(len(v) > 1 for v in by_id.values()) >= 0.5 * len(by_id):
        halves = [[statistics.median(by_id[i]) for i in sorted(by_id)]]
    else:
        halves = [p.times for p in parts]
    first = [t for h in halves for t in h[:len(h) // 2] if t > 0]
    second = [t for h in halves for t in h[len(h) // 2:] if t > 0]
    if min(len(first), len(second)) < 2 * BATCHES:
        return None
    first, second = first[::-(-len(first) // DRIFT_EVENTS)], second[::-(-len(second) // DRIFT_EVENTS)]
    ratio, ci = ratio_ci(second, first, level)
    return {"ratio": 1 / ratio, "low": 1 / ci.high, "high": 1 / ci.low, "level": ci.level}


def _rate_over_time(s: EventSeries) -> list[list[float]]:
    """[[seconds since the start, events/s]] over RATE_WINDOWS windows of consecutive events: the
    events over their own times where the program prints them (placed at the window's last
    arrival, where stamped), else over the arrival gaps. One event's rate would be its inverse
    time, a spike per light event: windows show the rate the job holds."""
    n = len(s)
    if n < 2:
        return []
    w = max(1, min(n // 2, max(5, n // RATE_WINDOWS)))
    times = [0.0 if math.isnan(t) else t / 1000 for t in s.ms]
    cum = [0.0]
    for t in times:
        cum.append(cum[-1] + t)
    at = [0.0, *(t / 1e9 for t in s.at_ns)]
    points = []
    for a in range(0, n - w + 1, w):
        b = a + w
        if s.has_times:
            secs, x = cum[b] - cum[a], at[b] if s.has_stamps else cum[b]
        else:
            secs, x = at[b] - at[a], at[b]
        if secs > 0:
            points.append([x, w / secs])
    return points


def rate_timeline(runs: Sequence[tuple[int, bytes]]) -> list[tuple[int, float]]:
    """The event rate over time of runs given as (start_ns, stored series): each run's windows
    (_rate_over_time) placed on the runs' own clock, the one the machine monitor samples on, so
    the report draws the rate beside the machine's samples."""
    out: list[tuple[int, float]] = []
    for start_ns, blob in runs:
        if not blob or start_ns <= 0:
            continue
        out.extend((start_ns + int(x * 1e9), rate) for x, rate in _rate_over_time(decode(blob)))
    return sorted(out)
