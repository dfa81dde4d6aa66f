"""Outlier detection with the modified Z-score (Iglewicz & Hoaglin 1993).

M_i = 0.6745 * (x_i - median) / MAD, and |M_i| > 3.5 flags x_i. 0.6745 is the 0.75 quantile of
the standard normal, so MAD/0.6745 estimates sigma for normal data while staying robust to the
very outliers we are looking for (the mean and stddev are not).
"""

from __future__ import annotations

import math
import statistics
from typing import Sequence

# When MAD == 0 (more than half the runs identical, common with coarse timers or integer
# metrics), the modified Z-score is undefined. Following the usual fallback (IBM SPSS, and
# Iglewicz & Hoaglin's remark) we use the mean absolute deviation scaled by 1.253314
# (sqrt(pi/2): MeanAD * 1.2533 estimates sigma for normal data) in place of MAD/0.6745.
MEANAD_SCALE = 1.253314
MAD_SCALE = 0.6745


def modified_z_scores(xs: Sequence[float]) -> list[float]:
    """Modified Z-score of every value; all zeros when every value equals the median.

    The standard library's median, not numpy's: `perflab run` of one command needs nothing else
    from numpy, whose import costs about 55 ms of every such run here (bench/startup.sh, run10).
    """
    arr = [float(x) for x in xs]
    if not arr:
        raise ValueError("no values: a statistic needs at least one measurement")
    if not all(math.isfinite(x) for x in arr):
        raise ValueError("values must be finite numbers (got NaN or infinity)")
    med = statistics.median(arr)
    dev = [x - med for x in arr]
    mad = statistics.median([abs(d) for d in dev])
    if mad > 0:
        return [MAD_SCALE * d / mad for d in dev]
    meanad = statistics.fmean([abs(d) for d in dev])
    if meanad == 0:
        return [0.0] * len(arr)
    return [d / (MEANAD_SCALE * meanad) for d in dev]


def mad_outliers(xs: Sequence[float], threshold: float = 3.5) -> list[int]:
    """Indices of values whose |modified Z-score| exceeds ``threshold`` (3.5 by default)."""
    return [i for i, z in enumerate(modified_z_scores(xs)) if abs(z) > threshold]
