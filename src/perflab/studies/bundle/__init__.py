"""A job's files, packed to run elsewhere and checked against the original (footprint's bundle).

Its public names load from their modules on first use (a command pays only for what it touches)."""

from perflab.startup import lazy_attributes

__getattr__ = lazy_attributes(__name__, {
    "BundleConfig": "study",
    "VerifyConfig": "study",
    "run_bundle": "study",
    "run_verify": "study",
    "mismatch_hint": "mismatch",
    "output_differences": "mismatch",
})
