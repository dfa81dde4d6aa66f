"""Blocked comparisons: rounds are blocks, each unit (a CPU) against the rest of its own round.

``loo_log_ratios``: d[c, r] = log x[c, r] - the median of log x[c', r] over the other units c'
of round r (leave-one-out), so a drift of the whole machine between rounds cancels and d
measures "how much slower than the rest, in that round".
``friedman``: Friedman's rank test over complete rounds (Friedman 1937; chi-square form with the
tie correction, as scipy.stats.friedmanchisquare): does any unit differ?
``wilcoxon_greater``: one-sided Wilcoxon signed-rank test of d against 0 (Wilcoxon 1945; zeros
dropped, exact null distribution for n <= 50 without ties, normal approximation with tie and
continuity correction otherwise, as scipy.stats.wilcoxon).
``min_detectable``: the smallest shift such a test finds with the given power.
numpy only (no scipy import): the per-core scan analyses 256 CPUs per round in milliseconds.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist
from typing import Sequence


def loo_log_ratios(x):
    """d[c, r] for a (units x rounds) array of positive costs; NaN where x is NaN or a round has
    fewer than 2 values."""
    import numpy as np

    logs = np.log(np.asarray(x, dtype=float))
    d = np.full(logs.shape, np.nan)
    for r in range(logs.shape[1]):
        col = logs[:, r]
        idx = np.flatnonzero(~np.isnan(col))
        k = idx.size
        if k < 2:
            continue
        order = np.argsort(col[idx], kind="stable")
        s = col[idx][order]
        pos = np.empty(k, dtype=int)
        pos[order] = np.arange(k)

        def reduced(j):
            # element j of the sorted column with the unit at sorted position pos removed
            return np.where(j < pos, s[np.minimum(j, k - 1)], s[np.minimum(j + 1, k - 1)])

        m = k - 1  # size of the others
        if m % 2:
            med = reduced(np.full(k, m // 2))
        else:
            med = (reduced(np.full(k, m // 2 - 1)) + reduced(np.full(k, m // 2))) / 2
        d[idx, r] = col[idx] - med
    return d


def _chi2_sf(x: float, df: int) -> float:
    """Survival function of the chi-square distribution for integer df (closed-form series)."""
    if x <= 0:
        return 1.0
    h = x / 2
    if df % 2 == 0:
        # P = exp(-h) * sum_{i < df/2} h^i / i!, summed in log space (no overflow for large df)
        logs = [-h + i * math.log(h) - math.lgamma(i + 1) for i in range(df // 2)]
    else:
        # P = erfc(sqrt(h)) + sum_{k=1}^{(df-1)/2} exp(-h) h^(k-1/2) / Gamma(k+1/2)
        base = math.erfc(math.sqrt(h))
        logs = [-h + (k - 0.5) * math.log(h) - math.lgamma(k + 0.5) for k in range(1, (df + 1) // 2)]
        if not logs:
            return min(1.0, base)
        top = max(logs)
        return min(1.0, base + math.exp(top) * sum(math.exp(v - top) for v in logs))
    top = max(logs)
    return min(1.0, math.exp(top) * sum(math.exp(v - top) for v in logs))


def friedman(x) -> tuple[float, float, int]:
    """Friedman chi-square, its p-value and the number of complete rounds used
    (units x rounds array; rounds with a NaN are left out). p is NaN with < 2 rounds or units."""
    import numpy as np

    arr = np.asarray(x, dtype=float)
    arr = arr[:, ~np.isnan(arr).any(axis=0)]
    k, n = arr.shape
    if k < 2 or n < 2:
        return math.nan, math.nan, int(n)
    ranks = np.empty_like(arr)
    ties = 0.0
    for r in range(n):
        col = arr[:, r]
        order = np.argsort(col, kind="stable")
        sc = col[order]
        rk = np.empty(k)
        i = 0
        while i < k:  # average ranks over runs of equal values
            j = i
            while j + 1 < k and sc[j + 1] == sc[i]:
                j += 1
            rk[i:j + 1] = (i + j) / 2 + 1
            t = j - i + 1
            ties += t ** 3 - t
            i = j + 1
        ranks[order, r] = rk
    rsum = ranks.sum(axis=1)
    stat = 12.0 / (n * k * (k + 1)) * float((rsum ** 2).sum()) - 3.0 * n * (k + 1)
    denom = 1.0 - ties / (n * k * (k * k - 1))
    if denom <= 0:
        return 0.0, 1.0, int(n)
    stat /= denom
    return float(stat), _chi2_sf(stat, k - 1), int(n)


@lru_cache(maxsize=None)
def _signed_rank_tail(n: int) -> tuple[float, ...]:
    """P(W+ >= w) for w = 0..n(n+1)/2 under H0, by counting subsets of {1..n} (dynamic programming)."""
    top = n * (n + 1) // 2
    counts = [0] * (top + 1)
    counts[0] = 1
    for k in range(1, n + 1):
        for w in range(top, k - 1, -1):
            counts[w] += counts[w - k]
    total = 2 ** n
    tail, acc = [0.0] * (top + 1), 0
    for w in range(top, -1, -1):
        acc += counts[w]
        tail[w] = acc / total
    return tuple(tail)


def wilcoxon_greater(d: Sequence[float]) -> float:
    """One-sided p-value of the Wilcoxon signed-rank test, H1: the median of d is above 0."""
    import numpy as np

    arr = np.asarray([v for v in d if not math.isnan(v) and v != 0], dtype=float)
    n = arr.size
    if n == 0:
        return 1.0
    a = np.abs(arr)
    order = np.argsort(a, kind="stable")
    sa = a[order]
    ranks = np.empty(n)
    tie_term = 0.0
    i = 0
    while i < n:
        j = i
        while j + 1 < n and sa[j + 1] == sa[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        t = j - i + 1
        tie_term += t ** 3 - t
        i = j + 1
    w = float(ranks[arr > 0].sum())
    if n <= 50 and tie_term == 0:
        return _signed_rank_tail(n)[int(round(w))]
    mean = n * (n + 1) / 4
    var = n * (n + 1) * (2 * n + 1) / 24 - tie_term / 48
    if var <= 0:
        return 1.0
    z = (w - mean - 0.5) / math.sqrt(var)
    return 1.0 - NormalDist().cdf(z)


def min_detectable(sigma: float, n: int, alpha: float, power: float = 0.8) -> float:
    """Smallest shift of d (log units) a one-sided Wilcoxon test at level alpha finds with the
    given power after n rounds of noise sigma: (z_{1-alpha} + z_power) sigma / sqrt(n 3/pi)
    (3/pi: the test's efficiency against a t-test on normal data); inf when even n positive
    rounds out of n, less one to spare (a disturbed round left out, or one below 0), cannot reach
    alpha: 2^-(n-1) >= alpha. Without the spare round the exact test's floor of 2^-n makes the
    normal approximation promise what a scan of 9 rounds of 16 CPUs cannot deliver."""
    if n < 2 or 0.5 ** (n - 1) >= alpha or math.isnan(sigma):
        return math.inf
    z = NormalDist().inv_cdf(1 - alpha) + NormalDist().inv_cdf(power)
    return z * sigma / math.sqrt(n * 3 / math.pi)
