"""Which platform for a target event rate inside a power envelope: events per second, watt and money.

Its public names load from their modules on first use (a command pays only for what it touches)."""

from perflab.startup import lazy_attributes

__getattr__ = lazy_attributes(__name__, {
    "NAME": "study",
    "load_platforms": "study",
    "read": "study",
    "run_cost": "study",
    "energy_optimal": "energy",
    "events_metric": "energy",
    "run_joules": "energy",
    "source_of": "energy",
    "summarise": "energy",
})
