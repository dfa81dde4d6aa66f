"""Which build is fastest and leanest: one workload compiled several ways, compared.

Its public names load from their modules on first use (a command pays only for what it touches)."""

from perflab.startup import lazy_attributes

__getattr__ = lazy_attributes(__name__, {
    "Config": "study",
    "NAME": "study",
    "VariantsConfig": "study",
    "analyse": "study",
    "execute": "study",
    "plan": "study",
    "CAUSE": "counts",
    "COUNT_RUNS": "counts",
    "BuildInfo": "result",
    "Estimate": "result",
    "LABELS": "result",
    "VariantOutcome": "result",
    "VariantsResult": "result",
    "pct": "result",
})
