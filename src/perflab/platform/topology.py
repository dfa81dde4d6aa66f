"""Machine topology: logical CPUs, cores, SMT siblings, sockets, NUMA nodes, caches.

The data types below are the contract every study uses (placement plans, per-core verdicts,
front-end reach). ``read_topology(root)`` fills them from a sysfs/proc tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Cpu:
    """One online logical CPU."""

    id: int
    core: int  # index into Topology.cores (dense, 0..n_cores-1), not the kernel's core_id
    socket: int  # physical_package_id as the kernel reports it
    node: int  # NUMA node id (sparse ids kept as-is); 0 where the kernel has no NUMA
    siblings: tuple[int, ...]  # online SMT siblings including itself, sorted
    core_id: int | None = None  # kernel's raw core_id, for display only
    max_freq_khz: int | None = None


@dataclass(frozen=True)
class Core:
    """One physical core: the online CPUs sharing its execution units."""

    index: int
    socket: int
    node: int
    cpus: tuple[int, ...]


@dataclass(frozen=True)
class Node:
    """One NUMA node with its online CPUs (possibly none) and memory size."""

    id: int
    cpus: tuple[int, ...]
    mem_bytes: int | None = None


@dataclass(frozen=True)
class Cache:
    """One cache instance: level, type (Data/Instruction/Unified), size, sharing CPUs."""

    level: int
    type: str
    size_bytes: int | None
    cpus: tuple[int, ...]
    line_size: int | None = None
    ways: int | None = None


@dataclass(frozen=True)
class Topology:
    cpus: tuple[Cpu, ...]  # online CPUs sorted by id
    cores: tuple[Core, ...]
    sockets: tuple[int, ...]  # package ids that have online CPUs
    nodes: tuple[Node, ...]  # online NUMA nodes, ascending id
    distances: dict[tuple[int, int], int] = field(default_factory=dict)
    caches: tuple[Cache, ...] = ()
    allowed: tuple[int, ...] | None = None  # CPUs this process may run on (live machine only)
    rule_notes: tuple[str, ...] = ()  # which rule was followed where the tree is ambiguous

    def cpu(self, cpu_id: int) -> Cpu:
        for c in self.cpus:
            if c.id == cpu_id:
                return c
        raise KeyError(cpu_id)

    @property
    def cpu_ids(self) -> tuple[int, ...]:
        return tuple(c.id for c in self.cpus)

    @property
    def smt(self) -> bool:
        return any(len(c.cpus) > 1 for c in self.cores)

    def caches_of(self, level: int, type_: str | None = None) -> list[Cache]:
        return [c for c in self.caches if c.level == level and (type_ is None or c.type == type_)]
