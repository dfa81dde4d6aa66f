"""Percentile bootstrap confidence intervals (Efron & Tibshirani 1993, ch. 13).

Resample with replacement ``n_boot`` times, take the statistic of every resample, and report the
(alpha/2, 1-alpha/2) quantiles of those statistics. A seeded ``numpy.random.Generator`` (PCG64)
makes the interval deterministic: the same data and seed give the same interval.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from perflab.errors import PerflabError
from perflab.stats.describe import _values

if TYPE_CHECKING:
    from perflab.stats.describe import Values

# Resample in blocks so that n_boot x n never needs more than ~8M floats at once.
_BLOCK_ELEMENTS = 8_000_000


@dataclass(frozen=True)
class Ratio:
    """Ratio of medians a/b with its percentile bootstrap confidence interval."""

    ratio: float
    lo: float
    hi: float


def _check(confidence: float, n_boot: int) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")


def bootstrap_medians(xs: Values, n_boot: int = 2000, seed: int = 0, rng=None):
    """Medians of ``n_boot`` resamples of ``xs`` (numpy array), drawn from ``rng`` or ``seed``."""
    import numpy as np

    arr = _values(xs)
    rng = rng if rng is not None else np.random.default_rng(seed)
    n = arr.size
    out = np.empty(n_boot)
    block = max(1, _BLOCK_ELEMENTS // n)
    for start in range(0, n_boot, block):
        stop = min(n_boot, start + block)
        idx = rng.integers(0, n, size=(stop - start, n))
        out[start:stop] = np.median(arr[idx], axis=1)
    return out


def bootstrap_median_ci(
    xs: Sequence[float], confidence: float = 0.95, n_boot: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap CI of the median: (lo, hi); (x, x) for a single value."""
    import numpy as np

    _check(confidence, n_boot)
    arr = _values(xs)
    if arr.size == 1:
        return float(arr[0]), float(arr[0])
    meds = bootstrap_medians(arr, n_boot=n_boot, seed=seed)
    alpha = 1.0 - confidence
    lo, hi = np.quantile(meds, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(lo), float(hi)


def ratio_of_medians(
    a: Sequence[float],
    b: Sequence[float],
    confidence: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> Ratio:
    """median(a)/median(b) with a percentile bootstrap CI (a and b resampled independently)."""
    import numpy as np

    _check(confidence, n_boot)
    arr_a, arr_b = _values(a), _values(b)
    med_b = float(np.median(arr_b))
    if med_b == 0.0:
        raise PerflabError(
            "cannot form a ratio of medians: the baseline's median is 0 "
            "(pick a metric that is non-zero, e.g. wall time or events/s)"
        )
    ratio = float(np.median(arr_a)) / med_b
    # One generator for both samples, so the pair of resamples is reproducible from one seed.
    rng = np.random.default_rng(seed)
    meds_a = bootstrap_medians(arr_a, n_boot=n_boot, rng=rng)
    meds_b = bootstrap_medians(arr_b, n_boot=n_boot, rng=rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = meds_a / meds_b
    # A resample of b whose median is 0 gives inf; it belongs in the upper tail, which quantile
    # handles for +inf, but a 0/0 (nan) carries no information: drop it.
    ratios = ratios[~np.isnan(ratios)]
    alpha = 1.0 - confidence
    lo, hi = np.quantile(ratios, [alpha / 2.0, 1.0 - alpha / 2.0])
    return Ratio(ratio=ratio, lo=float(lo), hi=float(hi))
