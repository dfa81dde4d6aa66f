"""Which CPUs this process may use: the one rule every study, the executor and the CPU options ask,
so a count of usable CPUs, a pin and an option's check agree.

On the live machine it is the process's affinity mask (the kernel reports it within the active
CPUs, so a CPU taken offline is not in it; a cpuset or ``taskset`` narrows it). A snapshot root
(a fixture tree) records no process: there every online CPU it records is usable. A topology
carries the mask taken when it was read (``Topology.allowed``, None for a snapshot), and the rule
applied to it is its online CPUs within that mask. Another task's affinity (platform/cpuset.py
moving threads off a CPU) is a different question, asked there.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from perflab.platform.sysfs import Root

if TYPE_CHECKING:
    from perflab.platform.topology_types import Topology

LIVE = Root("/")


def usable_cpus(where: Root | Topology = LIVE) -> tuple[int, ...]:
    """The CPUs this process may run on, ascending: of the machine under a root (module docstring),
    or of a topology read earlier (its online CPUs within the mask it was read with)."""
    if not isinstance(where, Root):
        ids = where.cpu_ids
        if where.allowed is None:
            return ids
        allowed = set(where.allowed)
        return tuple(c for c in ids if c in allowed)
    if where.is_live:
        return tuple(sorted(os.sched_getaffinity(0)))
    return tuple(sorted(where.read_cpulist("sys/devices/system/cpu/online") or ()))
