"""Descriptive statistics of one sample: centre, spread, MAD, coefficient of variation.

Functions only: the ``Summary`` record lives in sample.py, which `perflab run` does not load.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence, Union

if TYPE_CHECKING:  # numpy loads lazily: `perflab run` starts without it
    import numpy as np
    from numpy.typing import NDArray

    # What a statistic takes: the caller's list, or an array another statistic already made.
    Values = Union[Sequence[float], NDArray[np.float64]]


def _values(xs: Values) -> NDArray[np.float64]:
    import numpy as np

    arr = np.asarray(list(xs), dtype=float)
    if arr.size == 0:
        raise ValueError("no values: a statistic needs at least one measurement")
    if not np.all(np.isfinite(arr)):
        raise ValueError("values must be finite numbers (got NaN or infinity)")
    return arr


def median(xs: Sequence[float]) -> float:
    """Sample median (mean of the two middle values for an even count)."""
    import numpy as np

    return float(np.median(_values(xs)))


def mad(xs: Sequence[float]) -> float:
    """Median absolute deviation from the median, unscaled (multiply by 1.4826 for sigma)."""
    import numpy as np

    arr = _values(xs)
    return float(np.median(np.abs(arr - np.median(arr))))


def stddev(xs: Values) -> float:
    """Sample standard deviation with Bessel's correction (n-1); 0.0 for a single value."""
    import numpy as np

    arr = _values(xs)
    return float(np.std(arr, ddof=1)) if arr.size > 1 else 0.0


def cv(xs: Sequence[float]) -> float:
    """Coefficient of variation: sample stddev / mean (0.0 when the mean is 0)."""
    import numpy as np

    arr = _values(xs)
    m = float(np.mean(arr))
    return stddev(arr) / m if m else 0.0
