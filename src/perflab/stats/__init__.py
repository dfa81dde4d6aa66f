"""Statistics for benchmark samples: pure functions, numpy/scipy imported inside them.

Every function names its method; see docs/statistics.md.
"""

from perflab.startup import lazy_attributes

# Every name is loaded when first asked for (PEP 562): `perflab run` needs no comparison,
# bootstrap, change point or Summary record, whose modules and dataclasses cost a few ms of
# every start (bench/startup.sh). (A lazy name must not also name a module: importing the module
# sets the package's attribute to it. Hence comparison.py for `compare`, sample.py for `summary`.)
_HOME = {
    "cv": "describe", "mad": "describe", "median": "describe", "stddev": "describe",
    "Summary": "sample", "summary": "sample",
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
