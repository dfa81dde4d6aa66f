"""Two-sample comparison: Mann-Whitney U, Cliff's delta, ratio of medians, Holm-Bonferroni."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from perflab.stats.bootstrap import ratio_of_medians
from perflab.stats.describe import _values

if TYPE_CHECKING:
    from perflab.stats.describe import Values


@dataclass(frozen=True)
class Comparison:
    """a versus b: ratio of medians a/b with CI, two-sided Mann-Whitney p, Cliff's delta."""

    ratio: float
    lo: float
    hi: float
    p_value: float
    significant: bool  # p_value < alpha (apply holm() first when testing several pairs)
    effect_size: float  # Cliff's delta in [-1, 1]: P(a > b) - P(a < b)

    @property
    def effect_magnitude(self) -> str:
        return cliffs_delta_magnitude(self.effect_size)


def mann_whitney(a: Values, b: Values) -> tuple[float, float]:
    """Mann-Whitney U of ``a`` (pairs a>b count 1, ties 1/2) and its two-sided p-value.

    scipy.stats.mannwhitneyu with alternative="two-sided" (exact distribution for small samples
    without ties, normal approximation with tie and continuity correction otherwise). When all
    values are equal the test has no information and p is 1.
    """
    from scipy.stats import mannwhitneyu

    arr_a, arr_b = _values(a), _values(b)
    res = mannwhitneyu(arr_a, arr_b, alternative="two-sided")
    u, p = float(res.statistic), float(res.pvalue)
    if math.isnan(p):  # nan: every value tied
        p = 1.0
    return u, p


def cliffs_delta(a: Sequence[float], b: Sequence[float]) -> float:
    """Cliff's delta = (#{a_i > b_j} - #{a_i < b_j}) / (n_a n_b), in O(n log n) by sorting."""
    import numpy as np

    arr_a, arr_b = _values(a), np.sort(_values(b))
    below = np.searchsorted(arr_b, arr_a, side="left")  # b_j < a_i
    above = arr_b.size - np.searchsorted(arr_b, arr_a, side="right")  # b_j > a_i
    return float((below.sum() - above.sum()) / (arr_a.size * arr_b.size))


def cliffs_delta_magnitude(delta: float) -> str:
    """Romano et al. (2006) labels: negligible < 0.147 <= small < 0.33 <= medium < 0.474 <= large."""
    d = abs(delta)
    if d < 0.147:
        return "negligible"
    if d < 0.33:
        return "small"
    if d < 0.474:
        return "medium"
    return "large"


def compare(
    a: Sequence[float],
    b: Sequence[float],
    alpha: float = 0.05,
    confidence: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> Comparison:
    """Compare sample a with baseline b: ratio of medians (bootstrap CI), Mann-Whitney, Cliff's delta."""
    r = ratio_of_medians(a, b, confidence=confidence, n_boot=n_boot, seed=seed)
    _, p = mann_whitney(a, b)
    return Comparison(
        ratio=r.ratio,
        lo=r.lo,
        hi=r.hi,
        p_value=p,
        significant=p < alpha,
        effect_size=cliffs_delta(a, b),
    )


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (Holm 1979), in the input order.

    Sort ascending; the i-th smallest (0-based) is multiplied by (m - i), capped at 1, and made
    monotone non-decreasing with a running maximum. Reject H_i at level alpha iff adjusted < alpha.
    """
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        p = float(pvalues[i])
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p-values must lie in [0, 1], got {p}")
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted
