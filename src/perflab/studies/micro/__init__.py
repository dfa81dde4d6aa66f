"""The micro-benchmark pack: the machine's own kernels, timed one by one.

Its public names load from their modules on first use (a command pays only for what it touches)."""

from perflab.startup import lazy_attributes

__getattr__ = lazy_attributes(__name__, {
    "Config": "study",
    "IO_BENCHES": "study",
    "MicroResult": "study",
    "NAME": "study",
    "analyse": "study",
    "execute": "study",
    "plan": "study",
})
