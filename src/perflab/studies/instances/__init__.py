"""How many copies per machine, and where: throughput against copies and placement.

Its public names load from their modules on first use (a command pays only for what it touches)."""

from perflab.startup import lazy_attributes

__getattr__ = lazy_attributes(__name__, {
    "Config": "study",
    "InstancesConfig": "study",
    "NAME": "study",
    "analyse": "study",
    "default_ns": "study",
    "execute": "study",
    "plan": "study",
    "point_throughput": "study",
    "MIN_ROUNDS": "optimum",
    "choose": "optimum",
    "min_rounds": "optimum",
    "mw_greater": "optimum",
    "POLICIES": "placement",
    "apportion": "placement",
    "cpu_order": "placement",
    "fork_masters": "placement",
    "node_order": "placement",
    "plan_notes": "placement",
    "ForkVerdict": "result",
    "InstancesResult": "result",
    "counter_ratio": "result",
    "sign_test": "result",
})
