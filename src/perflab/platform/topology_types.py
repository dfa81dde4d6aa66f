"""Machine topology's data types: logical CPUs, cores, SMT siblings, sockets, NUMA nodes, caches.

They are the contract every study uses (placement plans, per-core verdicts, front-end reach);
platform/topology.py fills them from a sysfs/proc tree, ``Topology.from_dict`` from a stored
record (the per-boot machine cache: platform/hostcache.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


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
    offline: tuple[int, ...] = ()  # CPUs present in the tree (cpuN/ exists) but offline

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

    def to_dict(self) -> dict:
        """A JSON-able form (distances keyed "i,j") for stores and ``perflab machine --json``."""
        return {
            "sockets": list(self.sockets),
            "cores": [
                {"index": c.index, "socket": c.socket, "node": c.node, "cpus": list(c.cpus)}
                for c in self.cores
            ],
            "cpus": [
                {
                    "id": c.id,
                    "core": c.core,
                    "socket": c.socket,
                    "node": c.node,
                    "siblings": list(c.siblings),
                    "core_id": c.core_id,
                    "max_freq_khz": c.max_freq_khz,
                }
                for c in self.cpus
            ],
            "nodes": [{"id": n.id, "cpus": list(n.cpus), "mem_bytes": n.mem_bytes} for n in self.nodes],
            "distances": {f"{i},{j}": d for (i, j), d in sorted(self.distances.items())},
            "caches": [
                {
                    "level": c.level,
                    "type": c.type,
                    "size_bytes": c.size_bytes,
                    "cpus": list(c.cpus),
                    "line_size": c.line_size,
                    "ways": c.ways,
                }
                for c in self.caches
            ],
            "allowed": list(self.allowed) if self.allowed is not None else None,
            "offline": list(self.offline),
            "smt": self.smt,
            "rule_notes": list(self.rule_notes),
            "counts": {
                "sockets": len(self.sockets),
                "cores": len(self.cores),
                "threads": len(self.cpus),
                "numa_nodes": len(self.nodes),
                "l3_groups": len(self.caches_of(3)),
            },
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], allowed: tuple[int, ...] | None = None) -> "Topology":
        """The inverse of ``to_dict`` (its derived ``smt`` and ``counts`` are recomputed).
        ``allowed`` is this process's affinity, which a stored record cannot know."""
        return cls(
            cpus=tuple(Cpu(**{**c, "siblings": tuple(c["siblings"])}) for c in d["cpus"]),
            cores=tuple(Core(**{**c, "cpus": tuple(c["cpus"])}) for c in d["cores"]),
            sockets=tuple(d["sockets"]),
            nodes=tuple(Node(**{**n, "cpus": tuple(n["cpus"])}) for n in d["nodes"]),
            distances={(int(k.split(",")[0]), int(k.split(",")[1])): v for k, v in d["distances"].items()},
            caches=tuple(Cache(**{**c, "cpus": tuple(c["cpus"])}) for c in d["caches"]),
            allowed=allowed,
            rule_notes=tuple(d["rule_notes"]),
            offline=tuple(d["offline"]),
        )
