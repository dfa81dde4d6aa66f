"""Is a core slow? Every CPU's speed against its peers', round by round.

Its public names load from their modules on first use (a command pays only for what it touches)."""

from perflab.startup import lazy_attributes

__getattr__ = lazy_attributes(__name__, {
    "Config": "study",
    "CoresConfig": "study",
    "NAME": "study",
    "analyse": "study",
    "execute": "study",
    "plan": "study",
    "select_cpus": "study",
    "per_cpu_counters": "counters",
    "called_slow": "detect",
    "detectable": "detect",
    "CoresResult": "result",
    "CpuRow": "result",
    "NAMED": "result",
    "as_change": "result",
    "named": "result",
    "rounds_text": "result",
})
