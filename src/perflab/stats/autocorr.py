"""Means of autocorrelated series (a power meter sampled once a second) with their intervals.

Samples a second apart are not independent: fans, temperatures and a BMC's own averaging move
slowly, and an interval that counts every sample as one observation is too narrow (under
checks/monitor.py's autocorrelated meter, far below its level). Under an AR(1) model the variance of a mean of n
samples is that of n (1 - r) / (1 + r) independent ones (the effective sample size; Wilks,
*Statistical Methods in the Atmospheric Sciences*, 3rd ed., eq. 5.12), r the lag-1
autocorrelation, estimated here from the series itself (pooled over its segments, each a
contiguous stretch such as one idle phase) and taken as 0 where negative. The difference of two
means uses Welch's t with the effective sizes in the Welch-Satterthwaite degrees of freedom.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Sequence

MAX_R = 0.95  # a larger estimate leaves fewer than 3 % of the samples effective: capped


class MeanCI(NamedTuple):
    """A mean, its interval at ``level``, its standard error and degrees of freedom."""

    mean: float
    low: float
    high: float
    se: float
    df: float
    n_eff: float
    level: float


def lag1(segments: Sequence[Sequence[float]]) -> float:
    """The lag-1 autocorrelation pooled over segments (each about its own mean), in [0, MAX_R],
    with the first-order correction of its bias in short series, E[r] ~ phi - (1 + 3 phi) / n
    (Kendall 1954; Marriott and Pope 1954), n the segments' mean length."""
    num = den = 0.0
    used = [seg for seg in segments if len(seg) >= 3]
    for seg in used:
        m = sum(seg) / len(seg)
        d = [x - m for x in seg]
        num += sum(a * b for a, b in zip(d, d[1:]))
        den += sum(x * x for x in d)
    if den <= 0:
        return 0.0
    r, n = num / den, sum(len(seg) for seg in used) / len(used)
    if n > 6:  # the correction's first-order term is no guide in shorter series
        r = (r * n + 1) / (n - 3)  # E[r] = phi - (1 + 3 phi) / n solved for phi
    return min(MAX_R, max(0.0, r))


def _moments(segments: Sequence[Sequence[float]]) -> tuple[float, float, float, int]:
    xs = [x for seg in segments for x in seg]
    n = len(xs)
    mean = sum(xs) / n
    var = sum((x - mean) ** 2 for x in xs) / (n - 1)
    r = lag1(segments)
    return mean, var, max(2.0, n * (1 - r) / (1 + r)), n


def _t(level: float, df: float) -> float:
    from scipy.stats import t as student_t

    return float(student_t.ppf(0.5 + level / 2, df))


def mean_ci(segments: Sequence[Sequence[float]], level: float = 0.95) -> MeanCI | None:
    """The mean of the samples of every segment, its t interval on the effective sample size
    (None with fewer than 3 samples)."""
    if sum(len(s) for s in segments) < 3:
        return None
    mean, var, n_eff, _ = _moments(segments)
    se, df = math.sqrt(var / n_eff), n_eff - 1
    half = _t(level, df) * se
    return MeanCI(mean, mean - half, mean + half, se, df, n_eff, level)


def diff_ci(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]], level: float = 0.95) -> MeanCI | None:
    """mean(a) - mean(b), Welch's t interval on the effective sample sizes (None with fewer than
    3 samples a side)."""
    if sum(len(s) for s in a) < 3 or sum(len(s) for s in b) < 3:
        return None
    ma, va, na, _ = _moments(a)
    mb, vb, nb, _ = _moments(b)
    qa, qb = va / na, vb / nb
    se = math.sqrt(qa + qb)
    if se == 0:
        return MeanCI(ma - mb, ma - mb, ma - mb, 0.0, math.inf, na + nb, level)
    df = (qa + qb) ** 2 / (qa ** 2 / (na - 1) + qb ** 2 / (nb - 1))
    half = _t(level, df) * se
    return MeanCI(ma - mb, ma - mb - half, ma - mb + half, se, df, na + nb, level)
