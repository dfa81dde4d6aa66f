"""A job's files, packed to run elsewhere and checked against the original (footprint's bundle).

Its public names load from their modules on first use (a command pays only for what it touches)."""

from perflab.startup import lazy_attributes

__getattr__ = lazy_attributes(__name__, {
    "BundleConfig": "study",
    "BundleResult": "study",
    "VerifyConfig": "verify",
    "VerifyResult": "verify",
    "mismatch_hint": "mismatch",
    "output_differences": "mismatch",
})
