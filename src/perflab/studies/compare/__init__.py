"""Two campaigns side by side: per measure, B/A with its interval and a corrected verdict.

Its public names load from their modules on first use (a command pays only for what it touches)."""

from perflab.startup import lazy_attributes

__getattr__ = lazy_attributes(__name__, {
    "CompareConfig": "study",
    "CompareResult": "study",
    "CompareRow": "study",
    "DRIFT": "study",
    "check_same_kind": "study",
    "compare_measurements": "study",
    "NAME": "study",
    "read": "study",
    "run_compare": "study",
    "design_key": "keys",
    "energy_j": "keys",
    "measure_title": "keys",
    "primary_metric": "keys",
    "series": "keys",
})
