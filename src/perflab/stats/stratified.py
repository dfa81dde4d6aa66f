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
    usable = [(list(a), list(b)) for a, b in strata if a and b and _median(a) > 0 and _median(b) > 0]
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
