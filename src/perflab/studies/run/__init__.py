"""One command or several, timed: medians, intervals, and which is fastest.

Its public names load from their modules on first use (a command pays only for what it touches)."""

from perflab.startup import lazy_attributes

__getattr__ = lazy_attributes(__name__, {
    "Command": "study",
    "Config": "study",
    "NAME": "study",
    "RunConfig": "study",
    "analyse": "study",
    "execute": "study",
    "plan": "study",
    "two_speeds_tested": "compare",
    "Benchmark": "result",
    "RunStudyResult": "result",
    "ranked_by": "result",
    "too_few_runs": "result",
    "verdict": "result",
})
