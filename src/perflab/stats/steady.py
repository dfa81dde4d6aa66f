"""Steady state of an event loop: where its warm-up ends, its steady rate with an interval, and
order-statistic intervals for per-event time quantiles.

``warmup``: a one-sided change point in the mean of the event times' logarithms (the
standardised CUSUM of a mean shift, its maximum over splits in the first half taken as the
statistic; Csorgo & Horvath, *Limit Theorems in Change-Point Analysis*, 1997) whose p-value
comes from permutations of the same times: a job with no warm-up is flagged at the ``alpha``
rate whatever the times' distribution (heavy tails included), as long as its events are
exchangeable. A split is reported only where the events
before it are also ``min_slower`` times slower (medians): over a million events a 1 % start-up
difference is significant and still no warm-up worth cutting.

``steady_rate``: events over their time, pooled across clusters (Cochran's ratio estimator,
*Sampling Techniques* sec. 6.4) with a Student-t interval on k - 1 degrees of freedom: the runs
are the clusters where there are three or more (a run's events share its machine state, so
runs are the independent unit), else ten consecutive batches of each run's events (batch
means), which assumes the batches independent.

``quantile_ci``: the distribution-free interval [x(l), x(u)] for the q-quantile (Conover,
*Practical Nonparametric Statistics* sec. 3.2), Bin(n, q) coverage; where n is too small for
the level (p99 of 100 events) the achieved level is reported, never the asked one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from perflab.stats.interval import CI

BATCHES = 10  # batches per run when there are too few runs to be the clusters


@dataclass(frozen=True)
class Warmup:
    """Where the warm-up ends: ``events`` events before the steady part (0: none found)."""

    events: int
    how: str  # "change point", "skip" (--skip-events) or "none"
    p: float | None = None  # the change point's permutation p-value
    slower: float | None = None  # median event time before the split / after it


def _split_stats(x, kmax: int):
    """The standardised mean shift of the first k values against the rest, k = 1..kmax (rows
    of ``x`` are permutations): (S_k - k mean) / sqrt(k (n - k) / n var), a two-sample z whose
    mean and variance are the same for every permutation of the same values."""
    import numpy as np

    n = x.shape[-1]
    k = np.arange(1, kmax + 1)
    mean, var = float(x.mean()), float(x.var())
    s = np.cumsum(x, axis=-1)[..., :kmax]
    return (s - k * mean) / np.sqrt(k * (n - k) / n * max(var, 1e-300))


def warmup(times: Sequence[float], alpha: float = 0.01, min_slower: float = 1.10,
           permutations: int = 199, seed: int = 0, min_events: int = 10) -> Warmup:
    """The warm-up at the start of ``times`` (per-event durations, in event order), or none."""
    import numpy as np

    x = np.asarray([t for t in times if not math.isnan(t)], dtype=float)
    n = len(x)
    if n < min_events:
        return Warmup(0, "none")
    kmax = n // 2
    # Log times: a slow start is a ratio, and the log tames a heavy tail (Pareto -> exponential)
    # so that one heavy event weighs as a few, not as the whole warm-up. Zero gaps (lines read
    # together) are floored at the smallest positive time.
    floor = float(x[x > 0].min()) if (x > 0).any() else 1.0
    r = np.log(np.maximum(x, floor))
    z = _split_stats(r, kmax)
    best = int(np.argmax(z))
    stat = float(z[best])
    k = best + 1
    slower = float(np.median(x[:k]) / np.median(x[k:])) if np.median(x[k:]) > 0 else math.inf
    if stat <= 0 or slower < min_slower:
        return Warmup(0, "none", None, slower)
    rng = np.random.default_rng(seed)
    # Permutations in chunks: a million events x 199 permutations would otherwise need 1.6 GB.
    exceed, chunk = 0, max(1, min(permutations, 4_000_000 // n))
    done = 0
    while done < permutations:
        m = min(chunk, permutations - done)
        perm = np.stack([rng.permutation(r) for _ in range(m)])
        exceed += int((_split_stats(perm, kmax).max(axis=1) >= stat).sum())
        done += m
    p = (1 + exceed) / (1 + permutations)
    if p > alpha:
        return Warmup(0, "none", p, slower)
    return Warmup(k, "change point", p, slower)


def steady_rate(clusters: Sequence[tuple[float, float]], level: float = 0.95) -> tuple[float, CI | None]:
    """Events per second over (events, seconds) clusters and its t interval (None: < 2 clusters)."""
    k = len(clusters)
    events = sum(c[0] for c in clusters)
    secs = sum(c[1] for c in clusters)
    if secs <= 0:
        return math.nan, None
    rate = events / secs
    if k < 2:
        return rate, None
    mean_t = secs / k
    resid = [(e - rate * s) for e, s in clusters]
    var = sum(d * d for d in resid) / (k - 1) / k / (mean_t * mean_t)
    half = t_quantile(0.5 + level / 2, k - 1) * math.sqrt(var)
    return rate, CI(rate - half, rate + half, level)


def batches(times: Sequence[float], count: int = BATCHES) -> list[tuple[float, float]]:
    """``count`` consecutive batches of per-event times as (events, seconds) clusters."""
    n = len(times)
    if n < count:
        return [(float(n), sum(times) / 1000)] if n else []
    edges = [round(i * n / count) for i in range(count + 1)]
    return [(float(b - a), sum(times[a:b]) / 1000) for a, b in zip(edges, edges[1:])]


def quantile_ci(xs: Sequence[float], q: float, level: float = 0.95) -> tuple[float, CI]:
    """The q-quantile of ``xs`` (order statistic ceil(n q)) and its order-statistic interval."""
    from scipy.stats import binom

    data = sorted(xs)
    n = len(data)
    if n == 0:
        return math.nan, CI(math.nan, math.nan, 0.0)
    point = data[min(n - 1, max(0, math.ceil(n * q) - 1))]
    # [x(l), x(u)] covers the q-quantile with P(l <= B < u), B ~ Bin(n, q) (1-based l < u);
    # symmetric tails of (1 - level)/2, widened to the ends where n cannot give more.
    tail = (1 - level) / 2
    lo = int(binom.ppf(tail, n, q))  # P(B < lo) <= tail
    hi = int(binom.ppf(1 - tail, n, q)) + 1
    lo, hi = max(1, lo), min(n, hi)
    cover = float(binom.cdf(hi - 1, n, q) - binom.cdf(lo - 1, n, q))
    return point, CI(data[lo - 1], data[hi - 1], cover)


def t_quantile(p: float, df: int) -> float:
    """Student's t quantile (scipy, loaded on first use)."""
    from scipy.stats import t

    return float(t.ppf(p, df))
