"""Which files the job really needs: what it opened, read and executed, traced with strace.

Its public names load from their modules on first use (a command pays only for what it touches)."""

from perflab.startup import lazy_attributes

__getattr__ = lazy_attributes(__name__, {
    "FootprintConfig": "study",
    "FootprintResult": "study",
    "MIN_CI_RUNS": "study",
    "TopDir": "files",
    "analyse": "study",
    "execute": "study",
    "files_used": "files",
    "plan": "study",
})
