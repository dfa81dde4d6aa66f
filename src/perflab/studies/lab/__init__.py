"""The main job: one study after another on the reference workload, one report.

Its public names load from their modules on first use (a command pays only for what it touches)."""

from perflab.startup import lazy_attributes

__getattr__ = lazy_attributes(__name__, {
    "Config": "study",
    "LabResult": "study",
    "NAME": "study",
    "Outcome": "study",
    "execute": "study",
    "plan": "study",
    "verdict": "study",
    "LabContext": "steps",
    "lab_workload": "steps",
    "slowest_event": "steps",
})
