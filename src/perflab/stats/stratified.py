"""A shift that runs through many design points: the van Elteren stratified rank-sum test.

van Elteren (1960), "On the combination of independent two-sample tests of Wilcoxon": within each
stratum (a design point: a copy count, a CPU, a size) the runs of A and B are ranked together and
B's rank sum W_k is taken; T = sum W_k / (n_k + 1) weights every stratum about equally whatever
its size. Under the null, E[T] = sum b_k / 2 and Var[T] = sum a_k b_k / (12 (n_k + 1)) times a
tie correction (1 - sum(t^3 - t) / (n_k^3 - n_k)); Z = (T - E[T]) / sqrt(Var[T]) is compared with
the normal distribution. With 5 runs a side, no single point can pass a Holm correction over
many points, while one test across 8 points finds a 5 % shift that every point shares.
The effect size is the geometric mean of the per-stratum ratios of medians, with a percentile
bootstrap interval that resamples runs within each stratum.
"""

from __future__ import annotations

import math
import random
from typing import Sequence

from perflab.stats.shift import u_cdf


def _midranks(values: Sequence[float]) -> tuple[list[float], float]:
    """Mid-ranks (1-based) and the tie term sum(t^3 - t)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    ties = 0.0
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        t = j - i + 1
        ties += t ** 3 - t
        i = j + 1
    return ranks, ties


def van_elteren(strata: Sequence[tuple[Sequence[float], Sequence[float]]]) -> tuple[float, float]:
    """(Z, two-sided p) of B shifted against A across strata of (a, b) samples."""
    t = e = v = 0.0
    for a, b in strata:
        na, nb = len(a), len(b)
        n = na + nb
        if na == 0 or nb == 0:
            continue
        ranks, ties = _midranks(list(a) + list(b))
        t += sum(ranks[na:]) / (n + 1)
        e += nb / 2
        v += na * nb / (12 * (n + 1)) * (1 - ties / (n ** 3 - n) if n > 1 else 0)
    if v <= 0:
        return 0.0, 1.0
    z = (t - e) / math.sqrt(v)
    return z, math.erfc(abs(z) / math.sqrt(2))


def _median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    m = len(s) // 2
    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2


def pooled_ratio(strata: Sequence[tuple[Sequence[float], Sequence[float]]], confidence: float = 0.95,
                 n_boot: int = 1000, seed: int = 0) -> tuple[float, float, float]:
    """Geometric mean over strata of median(b)/median(a), with a stratified bootstrap interval."""
    # Every value positive, not only the medians: a resample of a sample with zeros can have a
    # zero median (user time of `sleep`), which has no log.
    usable = [(list(a), list(b)) for a, b in strata if a and b and min(a) > 0 and min(b) > 0]
    if not usable:
        return math.nan, math.nan, math.nan

    def gmean(pairs: list[tuple[list[float], list[float]]]) -> float:
        return math.exp(sum(math.log(_median(b) / _median(a)) for a, b in pairs) / len(pairs))

    rng = random.Random(seed)
    boots = []
    for _ in range(n_boot):
        sample = [([rng.choice(a) for _ in a], [rng.choice(b) for _ in b]) for a, b in usable]
        boots.append(gmean(sample))
    boots.sort()
    lo = boots[int((1 - confidence) / 2 * (n_boot - 1))]
    hi = boots[int((1 + confidence) / 2 * (n_boot - 1))]
    return gmean(usable), lo, hi


def stratified_ratio_ci(strata: Sequence[tuple[Sequence[float], Sequence[float]]],
                        level: float = 0.95) -> tuple[float, float, float, float]:
    """(B/A, low, high, achieved level): the stratified Hodges-Lehmann shift of the logs with the
    interval that inverts van Elteren's statistic, from its exact null distribution.

    Within stratum k the pairwise log ratios d = log b_j - log a_i count with weight 1/(n_k + 1);
    S(delta) = sum of the weights of the d above delta is van Elteren's statistic of B shifted by
    -delta, so {delta : c <= S(delta) <= total - c} covers the true common shift with probability
    P(c <= S <= total - c) under the null (exact for continuous times that differ by a factor).
    The null of S is the convolution of the strata's Mann-Whitney distributions (stats.shift.u_cdf);
    beyond ``_EXACT_SUPPORT`` grid points, the normal approximation. One stratum gives Moses'
    interval (stats.shift.ratio_ci). Strata with a value <= 0 have no log ratio and are left out.
    """
    import numpy as np

    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must be in (0, 1), not {level}")
    usable = [(np.asarray(a, float), np.asarray(b, float)) for a, b in strata
              if len(a) and len(b) and min(a) > 0 and min(b) > 0]
    if not usable:
        return math.nan, math.nan, math.nan, 0.0
    # Integer weights on one grid: c_k = L / (n_k + 1) with L the lcm of the n_k + 1.
    lcm = 1
    for a, b in usable:
        lcm = math.lcm(lcm, a.size + b.size + 1)
    weights = [lcm // (a.size + b.size + 1) for a, b in usable]
    diffs = np.concatenate([(np.log(b)[None, :] - np.log(a)[:, None]).ravel() for a, b in usable])
    wts = np.concatenate([np.full(a.size * b.size, c) for (a, b), c in zip(usable, weights)])
    total = int(sum(c * a.size * b.size for (a, b), c in zip(usable, weights)))
    tail = (1.0 - level) / 2.0
    if total <= _EXACT_SUPPORT:
        pmf = np.zeros(1)
        pmf[0] = 1.0
        for (a, b), c in zip(usable, weights):
            cdf = u_cdf(a.size, b.size)
            p = np.diff(np.concatenate(([0.0], cdf)))
            spread = np.zeros(c * (p.size - 1) + 1)
            spread[::c] = p
            # FFT convolution: the direct one is quadratic in the support (13 s a stratum at
            # 97 runs a command split over two speeds); its rounding (~1e-16) is far below a tail
            if min(pmf.size, spread.size) > 64:
                from scipy.signal import fftconvolve  # ~1 s to import: only where it pays

                pmf = np.clip(fftconvolve(pmf, spread), 0.0, None)
            else:
                pmf = np.convolve(pmf, spread)
        cdf = np.cumsum(pmf)
        # The largest c >= 1 with P(S <= c - 1) <= tail; c = 1 (min..max) when none reaches it.
        below = int(np.searchsorted(cdf, tail + 1e-12, side="right"))  # cdf[below - 1] <= tail
        cut = max(1, below)
        achieved = 1.0 - 2.0 * float(cdf[cut - 1])
    else:
        mean = total / 2.0
        sd = math.sqrt(sum(c * c * a.size * b.size * (a.size + b.size + 1) / 12.0
                           for (a, b), c in zip(usable, weights)))
        z = math.sqrt(2.0) * _erfinv(level)
        cut = max(1, int(math.floor(mean - z * sd + 0.5)))
        achieved = 1.0 - math.erfc((mean - cut + 0.5) / sd / math.sqrt(2.0))
    order = np.argsort(-diffs, kind="stable")  # largest first
    d, cum = diffs[order], np.cumsum(wts[order])
    # S(delta) >= cut for delta below the value at which the weight from the top reaches cut;
    # S(delta) <= total - cut from the value at which it first passes total - cut.
    hi = float(d[int(np.searchsorted(cum, cut, side="left"))])
    lo = float(d[min(int(np.searchsorted(cum, total - cut, side="right")), d.size - 1)])
    # The estimate: where S crosses its null mean (one stratum: the median of the log ratios).
    mid = 0.5 * (float(d[int(np.searchsorted(cum, total / 2.0, side="left"))])
                 + float(d[min(int(np.searchsorted(cum, total / 2.0, side="right")), d.size - 1)]))
    return math.exp(mid), math.exp(lo), math.exp(hi), achieved


# Above this many grid points of S the exact convolution gives way to the normal approximation.
_EXACT_SUPPORT = 400_000


def _erfinv(y: float) -> float:
    from scipy.special import erfinv

    return float(erfinv(y))
