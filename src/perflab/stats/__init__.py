"""Statistics for benchmark samples: pure functions, numpy/scipy imported inside them.

Every function names its method; see docs/statistics.md.
"""

from perflab.startup import lazy_attributes

# `summary` names both a module and a function: imported here first, so the function is what
# the package's name holds whatever imports the module directly later.
from perflab.stats.summary import Summary, cv, mad, median, stddev, summary

# The rest is loaded when first asked for (PEP 562): `perflab run` needs no comparison, bootstrap
# or change point, whose modules and dataclasses cost a few ms of every start (bench/startup.sh).
# (A lazy name must not also name a module: importing the module sets the package's attribute
# to it. Hence comparison.py for `compare`.)
_HOME = {
    "Comparison": "comparison", "cliffs_delta": "comparison", "cliffs_delta_magnitude": "comparison",
    "compare": "comparison", "holm": "comparison", "mann_whitney": "comparison",
    "Ratio": "bootstrap", "bootstrap_median_ci": "bootstrap", "bootstrap_medians": "bootstrap",
    "ratio_of_medians": "bootstrap", "Knee": "changepoint", "knee": "changepoint",
    "CI": "interval", "median_ci": "interval", "mad_outliers": "outliers",
    "modified_z_scores": "outliers",
}
__getattr__ = lazy_attributes(__name__, _HOME)


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
