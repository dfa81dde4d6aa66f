"""Knee detection: a two-segment (hinge) linear fit against one line, compared by BIC.

Model 1: y = a + b x (2 parameters). Model 2, for a breakpoint at x_k taken from the data:
y = a + b x + c max(0, x - x_k) (continuous at x_k; a, b, c and the breakpoint: 4 parameters).
Both are fitted by least squares; with Gaussian errors BIC = n ln(RSS/n) + p ln(n) (Schwarz 1978).
The knee is the breakpoint with the smallest hinge BIC, reported only when
BIC(line) - BIC(hinge) > ``threshold`` (10 by default: "very strong" evidence in Kass & Raftery
1995's scale), so flat, linear and noisy-flat curves give None.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from perflab.stats.describe import _values

if TYPE_CHECKING:  # numpy loads lazily
    import numpy as np
    from numpy.typing import NDArray

# Residual sums of squares are floored at this fraction of the total sum of squares: on exactly
# linear (or exactly hinged) data the RSS is rounding noise (~1e-30) and its logarithm would
# otherwise turn float error into "evidence".
_RSS_FLOOR = 1e-9


@dataclass(frozen=True)
class Knee:
    """Where a curve bends: breakpoint x (one of the data's x), its index in x order, slopes."""

    x: float
    index: int  # position of the breakpoint in the points sorted by x (the input order if sorted)
    slope_before: float
    slope_after: float
    score: float  # BIC(one line) - BIC(two segments); larger is stronger evidence


def _bic(rss: float, n: int, params: int, floor: float) -> float:
    import math

    return n * math.log(max(rss, floor) / n) + params * math.log(n)


def _rss(design, y) -> tuple[float, NDArray[np.float64]]:
    import numpy as np

    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    resid = y - design @ coef
    return float(resid @ resid), coef


def knee(
    xs: Sequence[float], ys: Sequence[float], threshold: float = 10.0, min_segment: int = 3
) -> Knee | None:
    """Best two-segment changepoint of y(x) if BIC prefers it to one line by > ``threshold``.

    Each segment keeps at least ``min_segment`` points (the breakpoint counts in both), so a
    single stray end point cannot make a knee. Needs at least 2*min_segment - 1 points.
    """
    import numpy as np

    x, y = _values(xs), _values(ys)
    if x.size != y.size:
        raise ValueError(f"xs and ys differ in length ({x.size} != {y.size})")
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    n = int(x.size)
    if n < 2 * min_segment - 1:
        return None
    sst = float(((y - y.mean()) ** 2).sum())
    if sst == 0.0:
        return None  # flat: nothing bends
    floor = _RSS_FLOOR * sst
    ones = np.ones(n)
    rss_line, _ = _rss(np.column_stack([ones, x]), y)
    bic_line = _bic(rss_line, n, 2, floor)
    best: Knee | None = None
    best_bic = float("inf")
    for k in range(min_segment - 1, n - min_segment + 1):
        if x[k] == x[0] or x[k] == x[-1]:
            continue  # a breakpoint at an end (repeated x) is just a line
        hinge = np.maximum(0.0, x - x[k])
        rss, coef = _rss(np.column_stack([ones, x, hinge]), y)
        bic = _bic(rss, n, 4, floor)
        if bic < best_bic:
            best_bic = bic
            best = Knee(
                x=float(x[k]),
                index=k,
                slope_before=float(coef[1]),
                slope_after=float(coef[1] + coef[2]),
                score=bic_line - bic,
            )
    if best is None or best.score <= threshold:
        return None
    return best
