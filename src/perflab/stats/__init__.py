"""Statistics for benchmark samples: pure functions, numpy/scipy imported inside them.

Every function names its method; see docs/statistics.md.
"""

from perflab.stats.bootstrap import Ratio, bootstrap_median_ci, bootstrap_medians, ratio_of_medians
from perflab.stats.changepoint import Knee, knee
from perflab.stats.interval import CI, median_ci
from perflab.stats.compare import (
    Comparison,
    cliffs_delta,
    cliffs_delta_magnitude,
    compare,
    holm,
    mann_whitney,
)
from perflab.stats.outliers import mad_outliers, modified_z_scores
from perflab.stats.summary import Summary, cv, mad, median, stddev, summary

__all__ = [
    "CI",
    "median_ci",
    "Comparison",
    "Knee",
    "Ratio",
    "Summary",
    "bootstrap_median_ci",
    "bootstrap_medians",
    "cliffs_delta",
    "cliffs_delta_magnitude",
    "compare",
    "cv",
    "holm",
    "knee",
    "mad",
    "mad_outliers",
    "median",
    "modified_z_scores",
    "mann_whitney",
    "ratio_of_medians",
    "stddev",
    "summary",
]
