"""Which members of a group are slower than their peers? (seed 001's slow core, one level up)

Each member's sample (higher is better, e.g. events/s) is tested against the pooled samples of
the other members of its group with a two-sided Mann-Whitney U test. All members' U statistics
come from one joint ranking per group: the pool of a member and its peers is the whole group, so
U = R - n(n+1)/2 with R the member's rank sum in the group, and the tie correction is the
group's. Small groups use scipy's exact/asymptotic mannwhitneyu (perflab.stats.mann_whitney);
large ones the normal approximation with tie and continuity correction, which is what scipy
computes for them, at the cost of one sort per group instead of one per member.

p-values are Holm-corrected over every member tested. The effect size is the ratio of the
member's median to its peers' median, with a distribution-free interval: the order-statistic
(binomial) confidence interval of each median (Hollander & Wolfe) at level 1 - (1-c)/2, combined
into [lo_m/hi_p, hi_m/lo_p], which covers the ratio with probability >= c (Bonferroni). A member
is slow when its corrected p < alpha, the interval lies below 1 and the ratio is at most
1 - min_effect. A member with fewer than 2 values is not tested.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from perflab.stats.comparison import holm, mann_whitney

# Below this many values in a group the exact test of scipy is affordable and more accurate.
_EXACT_LIMIT = 5000


@dataclass(frozen=True)
class PeerTest:
    """One member against its group's other members."""

    member: str
    group: str
    n: int
    median: float
    peers_median: float | None
    ratio: float | None  # median / peers' median (higher is better: < 1 is slower)
    low: float | None  # ratio interval
    high: float | None
    level: float | None  # the interval's guaranteed coverage
    p_value: float | None
    p_adjusted: float | None = None
    slow: bool = False


@functools.lru_cache(maxsize=4096)  # a fleet has few distinct sample sizes
def median_ci_positions(n: int, confidence: float) -> tuple[int, int, float]:
    """0-based order statistics (l, n-1-l) bracketing the median, and their coverage.

    [x_(l), x_(n-1-l)] covers the median with probability 1 - 2 P(Binom(n, 1/2) <= l); l is the
    largest with coverage >= confidence. With too few values (min, max) is returned with its
    lower, real coverage. The binomial CDF is summed in log space with numpy (O(n)), which
    keeps scipy's slow import out of a report on a large fleet.
    """
    import numpy as np

    if n < 2:
        return 0, max(n - 1, 0), 0.0
    tail = (1.0 - confidence) / 2.0
    k = np.arange(n // 2 + 1, dtype=float)
    # log C(n, k) by the recurrence C(n, k+1) = C(n, k) (n - k) / (k + 1).
    log_c = np.concatenate([[0.0], np.cumsum(np.log(n - k[:-1]) - np.log(k[:-1] + 1))])
    cdf = np.cumsum(np.exp(log_c - n * math.log(2.0)))
    below = np.flatnonzero(cdf <= tail)
    if below.size == 0:
        return 0, n - 1, 1.0 - 2.0 * 0.5 ** n
    l = int(below[-1])
    return l, n - 1 - l, 1.0 - 2.0 * float(cdf[l])


def median_ci(xs: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """Distribution-free CI of the median from order statistics: (low, high, real coverage)."""
    import numpy as np

    arr = np.sort(np.asarray(xs, dtype=float))
    l, u, cover = median_ci_positions(arr.size, confidence)
    return float(arr[l]), float(arr[u]), cover


def _kth_excluding(pool_sorted, excluded_positions, k: int) -> float:
    """The k-th smallest (0-based) value of the sorted pool without the given sorted positions."""
    import numpy as np

    j = k
    while True:
        nxt = k + int(np.searchsorted(excluded_positions, j, side="right"))
        if nxt == j:
            return float(pool_sorted[j])
        j = nxt


def _median_and_ci(values_at, n: int, confidence: float) -> tuple[float, float, float, float]:
    """(median, lo, hi, coverage) of n sorted values read through values_at(k)."""
    mid = (values_at((n - 1) // 2) + values_at(n // 2)) / 2.0
    l, u, cover = median_ci_positions(n, confidence)
    return mid, values_at(l), values_at(u), cover


def slow_members(
    groups: Mapping[str, Mapping[str, Sequence[float]]],
    alpha: float = 0.05,
    min_effect: float = 0.03,
    confidence: float = 0.95,
) -> list[PeerTest]:
    """Test every member of every group against its peers; Holm over all members tested."""
    import numpy as np

    if not 0.0 < alpha < 1.0 or not 0.0 < confidence < 1.0 or not 0.0 <= min_effect < 1.0:
        raise ValueError("alpha and confidence must lie in (0, 1), min_effect in [0, 1)")
    each = 1.0 - (1.0 - confidence) / 2.0
    tests: list[PeerTest] = []
    for group, members in groups.items():
        names = [m for m, xs in members.items() if len(xs) > 0]
        arrays = [np.asarray(members[m], dtype=float) for m in names]
        if not arrays:
            continue
        pool = np.concatenate(arrays)
        owner = np.repeat(np.arange(len(names)), [a.size for a in arrays])
        order = np.argsort(pool, kind="stable")
        pool_sorted = pool[order]
        positions = np.empty(pool.size, dtype=np.int64)
        positions[order] = np.arange(pool.size)
        big = pool.size > _EXACT_LIMIT
        if big:
            # Average ranks of ties (scipy.stats.rankdata's 'average'), from the one sort.
            first = np.r_[True, pool_sorted[1:] != pool_sorted[:-1]]
            starts = np.flatnonzero(first)
            counts = np.diff(np.r_[starts, pool.size]).astype(float)
            ranks = (starts + (counts + 1.0) / 2.0)[np.cumsum(first) - 1][positions]
            rank_sums = np.bincount(owner, weights=ranks, minlength=len(names))
            ties = float(np.sum(counts ** 3 - counts))
        for i, (name, xs) in enumerate(zip(names, arrays)):
            xs_sorted = np.sort(xs)
            n, n_p = xs.size, pool.size - xs.size
            med, lo_m, hi_m, cov_m = _median_and_ci(lambda k: float(xs_sorted[k]), n, each)
            if n < 2 or n_p < 2:
                tests.append(PeerTest(name, group, n, med, None, None, None, None, None, None))
                continue
            mine = np.sort(positions[owner == i])
            peer_at = lambda k: _kth_excluding(pool_sorted, mine, k)  # noqa: E731 - closes over this member's positions
            med_p, lo_p, hi_p, cov_p = _median_and_ci(peer_at, n_p, each)
            if big:
                u = rank_sums[i] - n * (n + 1) / 2.0
                total = n + n_p
                sigma = np.sqrt(n * n_p / 12.0 * ((total + 1) - ties / (total * (total - 1))))
                z = (abs(u - n * n_p / 2.0) - 0.5) / sigma if sigma > 0 else 0.0
                # Two-sided: 2 * sf(z) = erfc(z / sqrt 2).
                p = min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2.0))) if sigma > 0 else 1.0
            else:
                p = mann_whitney(xs, np.concatenate([a for j, a in enumerate(arrays) if j != i]))[1]
            ratio = med / med_p if med_p > 0 else None
            low = lo_m / hi_p if hi_p > 0 else None
            high = hi_m / lo_p if lo_p > 0 else None
            level = max(0.0, 1.0 - (1.0 - cov_m) - (1.0 - cov_p))
            tests.append(PeerTest(name, group, n, med, med_p, ratio, low, high, level, p))
    tested = [t for t in tests if t.p_value is not None]
    adjusted = holm([t.p_value for t in tested if t.p_value is not None]) if tested else []
    out: list[PeerTest] = []
    by_id = {id(t): p for t, p in zip(tested, adjusted)}
    for t in tests:
        if t.p_value is None:
            out.append(t)
            continue
        p_adj = by_id[id(t)]
        slow = (p_adj < alpha and t.high is not None and t.high < 1.0
                and t.ratio is not None and t.ratio <= 1.0 - min_effect)
        out.append(PeerTest(**{**t.__dict__, "p_adjusted": p_adj, "slow": slow}))
    return out
