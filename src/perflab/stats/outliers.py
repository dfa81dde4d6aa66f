"""Outlier detection with the modified Z-score (Iglewicz & Hoaglin 1993).

M_i = 0.6745 * (x_i - median) / MAD, and |M_i| > 3.5 flags x_i. 0.6745 is the 0.75 quantile of
the standard normal, so MAD/0.6745 estimates sigma for normal data while staying robust to the
very outliers we are looking for (the mean and stddev are not).
"""

from __future__ import annotations

from typing import Sequence

from perflab.stats.summary import _values

# When MAD == 0 (more than half the runs identical, common with coarse timers or integer
# metrics), the modified Z-score is undefined. Following the usual fallback (IBM SPSS, and
# Iglewicz & Hoaglin's remark) we use the mean absolute deviation scaled by 1.253314
# (sqrt(pi/2): MeanAD * 1.2533 estimates sigma for normal data) in place of MAD/0.6745.
MEANAD_SCALE = 1.253314
MAD_SCALE = 0.6745


def modified_z_scores(xs: Sequence[float]) -> list[float]:
    """Modified Z-score of every value; all zeros when every value equals the median."""
    import numpy as np

    arr = _values(xs)
    med = np.median(arr)
    dev = arr - med
    mad = np.median(np.abs(dev))
    if mad > 0:
        z = MAD_SCALE * dev / mad
    else:
        meanad = np.mean(np.abs(dev))
        if meanad == 0:
            return [0.0] * int(arr.size)
        z = dev / (MEANAD_SCALE * meanad)
    return [float(v) for v in z]


def mad_outliers(xs: Sequence[float], threshold: float = 3.5) -> list[int]:
    """Indices of values whose |modified Z-score| exceeds ``threshold`` (3.5 by default)."""
    return [i for i, z in enumerate(modified_z_scores(xs)) if abs(z) > threshold]
