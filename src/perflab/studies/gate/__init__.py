"""The CI gate: a candidate against a saved baseline, pass, fail or unsure, per threshold.

Its public names load from their modules on first use (a command pays only for what it touches)."""

from perflab.startup import lazy_attributes

__getattr__ = lazy_attributes(__name__, {
    "DEFAULT_ALPHA": "study",
    "DEFAULT_FAIL_IF": "study",
    "GateConfig": "study",
    "Threshold": "study",
    "baseline_measures": "study",
    "check_measures": "study",
    "NAME": "study",
    "read": "study",
    "evaluate": "study",
    "parse_threshold": "study",
    "EXIT_FAIL": "result",
    "EXIT_INCONCLUSIVE": "result",
    "EXIT_PASS": "result",
    "GateResult": "result",
})
