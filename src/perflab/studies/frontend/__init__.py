"""Is the front end the bottleneck? The code-size sweep and its knee against the I-cache and iTLB.

Its public names load from their modules on first use (a command pays only for what it touches)."""

from perflab.startup import lazy_attributes

__getattr__ = lazy_attributes(__name__, {
    "Config": "study",
    "FrontendConfig": "study",
    "FrontendResult": "study",
    "MODES": "study",
    "NAME": "study",
    "analyse": "study",
    "execute": "study",
    "plan": "study",
    "find_knee": "verdict",
})
