"""One sample's descriptive statistics in one record: centre, spread, quartiles, MAD."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

from perflab.stats.describe import _values


@dataclass(frozen=True)
class Summary:
    """Descriptive statistics of one sample (all in the sample's unit)."""

    n: int
    mean: float
    median: float
    stddev: float  # sample standard deviation (n-1); 0.0 when n == 1
    min: float
    max: float
    q1: float  # 25th percentile, linear interpolation (Hyndman-Fan type 7, numpy's default)
    q3: float  # 75th percentile, same method
    mad: float  # median absolute deviation from the median, unscaled

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def cv(self) -> float:
        """Coefficient of variation stddev/mean (0.0 when the mean is 0)."""
        return self.stddev / self.mean if self.mean else 0.0

    def to_dict(self) -> dict[str, float | int]:
        return asdict(self)



def summary(xs: Sequence[float]) -> Summary:
    """Mean, median, sample stddev, min/max, quartiles (type 7) and MAD of one sample."""
    import numpy as np

    arr = _values(xs)
    med = float(np.median(arr))
    q1, q3 = (float(v) for v in np.percentile(arr, [25.0, 75.0]))
    return Summary(
        n=int(arr.size),
        mean=float(np.mean(arr)),
        median=med,
        stddev=float(np.std(arr, ddof=1)) if arr.size > 1 else 0.0,
        min=float(arr.min()),
        max=float(arr.max()),
        q1=q1,
        q3=q3,
        mad=float(np.median(np.abs(arr - med))),
    )
