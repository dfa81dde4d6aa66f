"""The ratio of two samples with a distribution-free interval that carries its achieved level.

``ratio_ci(a, b)`` estimates how many times larger ``a`` is than ``b`` as exp of the
Hodges-Lehmann shift of the logs (the median of all m*n pairwise log ratios) and gives Moses'
interval for it: the order statistics [D(k+1), D(mn-k)] of the pairwise log ratios, with k taken
from the exact null distribution of the Mann-Whitney U statistic (Hollander & Wolfe,
*Nonparametric Statistical Methods*, 3rd ed., sec. 4.3). Its coverage, 1 - 2 P(U <= k), is exact
for continuous data when a and b differ by a factor (a shift of the logs), and is reported as
the interval's level; small samples get the level they can reach instead of a claimed 95 %.
It is the interval that goes with the Mann-Whitney test: the test rejects at alpha where the
(1 - alpha) interval excludes a ratio of 1.
"""

from __future__ import annotations

import math
import statistics
from bisect import bisect_right
from typing import Sequence

from perflab.stats.interval import CI

# Above this many pairs the exact distribution is replaced by the normal approximation.
_EXACT_PAIRS = 40_000
# Up to this many pairs the interval is computed without numpy, in exact integers: one command
# against another with hyperfine's 10 runs each is 100 pairs, and numpy's import (~55 ms) was most
# of such a comparison's start-up. Beyond it numpy's vectors are faster than the loops.
_PURE_PAIRS = 400


def u_cdf(m: int, n: int):
    """P(U <= k) for k = 0..mn under the null: the Gaussian binomial coefficient [m+n, m]_q."""
    import numpy as np

    p = np.zeros(m * n + 1)
    p[0] = 1.0
    for i in range(1, m + 1):
        # times (1 - q^(n+i)), then divided by (1 - q^i): afterwards p holds [n+i, i]_q
        s = n + i
        p[s:] -= p[:-s].copy()
        for r in range(i):
            p[r::i] = np.cumsum(p[r::i])
    return np.cumsum(p) / p.sum()


def u_cdf_exact(m: int, n: int) -> list[float]:
    """u_cdf without numpy: the same recurrence on Python integers, each P(U <= k) the correctly
    rounded quotient of two exact counts (as numpy's is, while the counts stay below 2**53)."""
    p = [0] * (m * n + 1)
    p[0] = 1
    for i in range(1, m + 1):
        s = n + i
        for j in range(len(p) - 1, s - 1, -1):  # from the top: each reads the count before it changes
            p[j] -= p[j - s]
        for r in range(i):
            acc = 0
            for j in range(r, len(p), i):
                acc += p[j]
                p[j] = acc
    total, acc, cdf = sum(p), 0, []
    for count in p:
        acc += count
        cdf.append(acc / total)
    return cdf


def _critical(m: int, n: int, level: float) -> tuple[int, float]:
    """The largest k with 1 - 2 P(U <= k) >= level, and that coverage (k = 0 when none reaches it)."""
    tail = (1.0 - level) / 2.0
    if m * n <= _EXACT_PAIRS:
        cdf = u_cdf_exact(m, n) if m * n <= _PURE_PAIRS else u_cdf(m, n)
        k = bisect_right(cdf, tail) - 1  # cdf is increasing: the last k whose tail is small enough
        if k < 0:
            return 0, 1.0 - 2.0 * float(cdf[0])
        return k, 1.0 - 2.0 * float(cdf[k])
    mu, sd = m * n / 2.0, math.sqrt(m * n * (m + n + 1) / 12.0)
    z = math.sqrt(2.0) * _erfinv(level)
    k = max(0, int(math.floor(mu - z * sd - 0.5)))
    achieved = 1.0 - math.erfc((mu - k - 0.5) / sd / math.sqrt(2.0))
    return k, achieved


def _erfinv(y: float) -> float:
    from scipy.special import erfinv

    return float(erfinv(y))


def runs_to_reach(level: float) -> int:
    """The fewest runs n of each of two samples for which ratio_ci's interval can reach ``level``:
    its widest (min..max) interval misses only when every run of one sample lies beyond every run
    of the other, P = 2 / C(2n, n) under the null."""
    n = 2
    while 2 / math.comb(2 * n, n) > 1 - level + 1e-12:  # 3 runs reach 90 % exactly
        n += 1
    return n


def ratio_ci(a: Sequence[float], b: Sequence[float], level: float = 0.95) -> tuple[float, CI]:
    """a/b as exp(Hodges-Lehmann shift of logs) with Moses' interval at its achieved level."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must be in (0, 1), not {level}")
    if 0 < len(a) * len(b) <= _PURE_PAIRS:
        if not all(0.0 < x < math.inf for x in (*a, *b)):
            raise ValueError("ratio_ci needs positive, finite values in both samples")
        la, lb = [math.log(x) for x in a], [math.log(x) for x in b]
        d = sorted(x - y for x in la for y in lb)
        k, achieved = _critical(len(la), len(lb), level)
        return math.exp(statistics.median(d)), CI(math.exp(d[k]), math.exp(d[-1 - k]), achieved)
    import numpy as np

    xa, xb = np.log(np.asarray(a, float)), np.log(np.asarray(b, float))
    if xa.size == 0 or xb.size == 0 or not (np.isfinite(xa).all() and np.isfinite(xb).all()):
        raise ValueError("ratio_ci needs positive, finite values in both samples")
    diffs = np.sort((xa[:, None] - xb[None, :]).ravel())
    k, achieved = _critical(xa.size, xb.size, level)
    point = float(np.exp(np.median(diffs)))
    return point, CI(float(np.exp(diffs[k])), float(np.exp(diffs[diffs.size - 1 - k])), achieved)


def signed_rank_cdf(n: int):
    """P(T+ <= k) for k = 0..n(n+1)/2 under the null: the coefficients of prod (1 + q^i)."""
    import numpy as np

    p = np.zeros(n * (n + 1) // 2 + 1)
    p[0] = 1.0
    for i in range(1, n + 1):
        p[i:] += p[:-i].copy()
    return np.cumsum(p) / p.sum()


def paired_ratio_ci(a: Sequence[float], b: Sequence[float], level: float = 0.95) -> tuple[float, CI, float]:
    """a/b from pairs (a_i, b_i) taken together, e.g. in one round: (ratio, CI, p).

    The ratio is exp of the Hodges-Lehmann estimate of the paired log ratios (the median of their
    Walsh averages); the interval is Tukey's order statistics of the Walsh averages with k from
    the exact null distribution of Wilcoxon's signed-rank statistic, at its achieved level
    (Hollander & Wolfe, sec. 3.2); p is the two-sided signed-rank test (scipy; zero differences
    dropped, Wilcoxon's method). Pairing removes what the pair shares: drift between rounds.
    """
    import numpy as np
    from scipy.stats import wilcoxon

    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must be in (0, 1), not {level}")
    if len(a) != len(b) or len(a) < 2:
        raise ValueError("paired_ratio_ci needs two samples of equal length >= 2")
    d = np.log(np.asarray(a, float)) - np.log(np.asarray(b, float))
    if not np.isfinite(d).all():
        raise ValueError("paired_ratio_ci needs positive, finite values")
    n = d.size
    i, j = np.triu_indices(n)
    w = np.sort((d[i] + d[j]) / 2.0)
    cdf = signed_rank_cdf(n)
    k = int((cdf <= (1.0 - level) / 2.0).sum()) - 1
    k, achieved = (0, 1.0 - 2.0 * float(cdf[0])) if k < 0 else (k, 1.0 - 2.0 * float(cdf[k]))
    p = 1.0 if not d.any() else float(wilcoxon(d, zero_method="wilcox").pvalue)
    return float(np.exp(np.median(w))), CI(float(np.exp(w[k])), float(np.exp(w[w.size - 1 - k])), achieved), p
