"""Placement plans: which CPUs (and which NUMA node's memory) each concurrent copy gets.

Pure functions of a ``Topology``, so the same plan logic that runs here (2 CPUs, one node) is
tested on dual-socket SMT, sub-NUMA-clustering, quad-socket and sparse-node AMD trees.

Policies (copy k of n):

- ``none``: no binding; the OS scheduler decides (``Slot.cpus == ()``).
- ``compact``: fill cores in order, SMT siblings adjacent: copy k on the k-th logical CPU of the
  list "core 0's threads, core 1's threads, ...", cores ordered by socket, node, first CPU.
- ``spread``: round-robin across sockets, then NUMA nodes within a socket, then cores within a
  node; the first thread of every core before any second thread.
- ``smt-last``: compact core order, but one copy per physical core before any SMT sibling.
- ``numa``: copies grouped per NUMA node in proportion to the node's usable CPUs (largest
  remainder), each bound to its node's whole CPU set (or, with ``numa_pin``, one CPU of it) and
  its memory bound to that node.

With ``threads`` T > 1 (multi-threaded copies) every copy gets T CPUs inside one NUMA node: a
node's CPUs are dealt one thread per core before any SMT sibling and cut into groups of T;
``compact`` and ``smt-last`` fill node after node, ``spread`` lets nodes (sockets first) take
turns, ``numa`` splits copies per node as above and binds memory too.

More copies than usable CPUs wrap around (oversubscription; ``plan_notes`` says so).
Only online CPUs that this process may use are planned on; CPU-less nodes are skipped; sparse
node ids are kept as the kernel numbers them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence, TypeVar

from perflab.errors import PerflabError
from perflab.platform.affinity import usable_cpus
from perflab.platform.sysfs import format_cpulist
from perflab.platform.topology import Topology

_T = TypeVar("_T")  # a CPU, or a group of them

POLICIES: tuple[str, ...] = ("none", "compact", "spread", "smt-last", "numa")


@dataclass(frozen=True)
class Slot:
    """Where copy ``copy`` runs: its CPU affinity (``()`` = unbound) and memory node."""

    copy: int
    cpus: tuple[int, ...]
    mem_node: int | None = None

    @property
    def affinity(self) -> tuple[int, ...] | None:
        """The value for ``RunSpec.cpus`` (None = no binding)."""
        return self.cpus or None


@dataclass(frozen=True)
class _Core:
    socket: int
    node: int
    cpus: tuple[int, ...]  # usable threads of this core, ascending


def _cores(topology: Topology) -> list[_Core]:
    """Physical cores restricted to usable CPUs, in compact order (socket, node, first CPU)."""
    usable = set(usable_cpus(topology))
    socket_rank = {s: i for i, s in enumerate(topology.sockets)}
    out = []
    for core in topology.cores:
        cpus = tuple(sorted(c for c in core.cpus if c in usable))
        if cpus:
            out.append(_Core(core.socket, core.node, cpus))
    out.sort(key=lambda c: (socket_rank.get(c.socket, len(socket_rank) + c.socket), c.node, c.cpus[0]))
    return out


def _round_robin(groups: Sequence[Sequence[_T]]) -> list[_T]:
    """Interleave groups of unequal length: g0[0], g1[0], g2[0], g0[1], ..."""
    out: list[_T] = []
    depth = max((len(g) for g in groups), default=0)
    for i in range(depth):
        out.extend(g[i] for g in groups if i < len(g))
    return out


def _hierarchy(cores: list[_Core]) -> dict[int, dict[int, list[_Core]]]:
    """socket -> node -> cores, each level in first-appearance (compact) order."""
    tree: dict[int, dict[int, list[_Core]]] = {}
    for core in cores:
        tree.setdefault(core.socket, {}).setdefault(core.node, []).append(core)
    return tree


def cpu_order(topology: Topology, policy: str) -> list[int]:
    """The order in which a policy hands out logical CPUs, one per copy."""
    cores = _cores(topology)
    if policy == "compact":
        return [cpu for core in cores for cpu in core.cpus]
    if policy == "smt-last":
        depth = max((len(c.cpus) for c in cores), default=0)
        return [c.cpus[t] for t in range(depth) for c in cores if t < len(c.cpus)]
    if policy == "spread":
        tree = _hierarchy(cores)
        depth = max((len(c.cpus) for c in cores), default=0)
        order: list[int] = []
        for t in range(depth):
            # Within one thread level: sockets take turns, inside a socket its nodes take turns.
            per_socket = [
                _round_robin([[c.cpus[t] for c in node_cores if t < len(c.cpus)] for node_cores in nodes.values()])
                for nodes in tree.values()
            ]
            order.extend(_round_robin(per_socket))
        return order
    raise PerflabError(f"no CPU order for policy {policy!r}: choose one of {', '.join(POLICIES)}")


def node_order(topology: Topology) -> list[tuple[int, tuple[int, ...]]]:
    """NUMA nodes with usable CPUs as (node id, cpus), sockets taking turns (for tie-breaks).

    Nodes come from ``topology.nodes`` (online nodes only), so a CPU whose node link points at an
    offline node (offline-cpu0-node0) is never bound to that node's memory.
    """
    usable = set(usable_cpus(topology))
    socket_rank = {s: i for i, s in enumerate(topology.sockets)}
    by_socket: dict[int, list[tuple[int, tuple[int, ...]]]] = {}
    for node in sorted(topology.nodes, key=lambda nd: nd.id):
        cpus = tuple(sorted(c for c in node.cpus if c in usable))
        if not cpus:
            continue  # CPU-less (memory-only) node: nothing to run there
        socket = topology.cpu(cpus[0]).socket
        by_socket.setdefault(socket_rank.get(socket, len(socket_rank) + socket), []).append((node.id, cpus))
    groups = [by_socket[k] for k in sorted(by_socket)]
    depth = max((len(g) for g in groups), default=0)
    return [g[i] for i in range(depth) for g in groups if i < len(g)]


def apportion(n: int, weights: Sequence[int]) -> list[int]:
    """Split n items in proportion to weights (largest remainder / Hamilton method).

    Ties in the remainder go to the earlier entry, so callers order entries by preference.
    """
    total = sum(weights)
    if total <= 0:
        return [0] * len(weights)
    quotas = [n * w / total for w in weights]
    shares = [int(q) for q in quotas]
    left = n - sum(shares)
    by_remainder = sorted(range(len(weights)), key=lambda i: (-(quotas[i] - shares[i]), i))
    for i in by_remainder[:left]:
        shares[i] += 1
    return shares


def plan(topology: Topology, n: int, policy: str, numa_pin: bool = False, threads: int = 1) -> list[Slot]:
    """Slots for n copies under a placement policy (see the module docstring)."""
    if policy not in POLICIES:
        raise PerflabError(f"unknown placement policy {policy!r}: choose one of {', '.join(POLICIES)}")
    if n < 1:
        raise PerflabError(f"number of copies must be at least 1, got {n}")
    if policy == "none":
        return [Slot(k, ()) for k in range(n)]
    if not usable_cpus(topology):
        raise PerflabError("the topology has no usable online CPU: check /sys/devices/system/cpu/online")
    if threads > 1:
        return _plan_threads(topology, n, policy, threads)
    if policy == "numa":
        return _plan_numa(topology, n, numa_pin)
    order = cpu_order(topology, policy)
    return [Slot(k, (order[k % len(order)],)) for k in range(n)]


def _plan_numa(topology: Topology, n: int, numa_pin: bool) -> list[Slot]:
    nodes = node_order(topology)
    shares = apportion(n, [len(cpus) for _, cpus in nodes])
    # Copies are grouped per node in ascending node id, so copy numbers read node by node.
    by_id = sorted(zip(nodes, shares), key=lambda item: item[0][0])
    slots: list[Slot] = []
    for (node, cpus), share in by_id:
        # Pinned copies take one core each before any SMT sibling of that node.
        inner = cpu_order(_restrict(topology, cpus), "smt-last") if numa_pin else []
        for i in range(share):
            bound = (inner[i % len(inner)],) if numa_pin else cpus
            slots.append(Slot(len(slots), bound, node))
    return slots


def check_threads(topology: Topology, threads: int) -> None:
    """Refuse a thread count that no NUMA node can hold (a copy never straddles nodes)."""
    if threads < 1:
        raise PerflabError(f"--threads-per-copy must be at least 1, got {threads}")
    largest = max((len(cpus) for _, cpus in node_order(topology)), default=0)
    if threads > largest:
        raise PerflabError(f"--threads-per-copy {threads} is larger than a NUMA node here (the largest "
                           f"has {largest} usable CPUs); use at most {largest}")


def thread_groups(topology: Topology, threads: int) -> list[tuple[int, list[tuple[int, ...]]]]:
    """Per NUMA node (node_order): its CPUs, one thread per core first, cut into groups of T."""
    check_threads(topology, threads)
    out = []
    for node, cpus in node_order(topology):
        order = cpu_order(_restrict(topology, cpus), "smt-last")
        groups = [tuple(sorted(order[i:i + threads])) for i in range(0, len(order) - threads + 1, threads)]
        out.append((node, groups))
    return out


def _plan_threads(topology: Topology, n: int, policy: str, threads: int) -> list[Slot]:
    per_node = thread_groups(topology, threads)
    if policy == "numa":
        shares = apportion(n, [len(groups) for _, groups in per_node])
        slots: list[Slot] = []
        for (node, groups), share in sorted(zip(per_node, shares), key=lambda item: item[0][0]):
            slots.extend(Slot(len(slots), groups[i % len(groups)], node) for i in range(share))
        return slots
    if policy == "spread":
        order = _round_robin([groups for _, groups in per_node])
    else:
        order = [g for _, groups in sorted(per_node, key=lambda item: item[0]) for g in groups]
    return [Slot(k, order[k % len(order)]) for k in range(n)]


def _restrict(topology: Topology, cpus: tuple[int, ...]) -> Topology:
    """The same topology with only ``cpus`` allowed."""
    allowed = set(cpus) if topology.allowed is None else set(cpus) & set(topology.allowed)
    return replace(topology, allowed=tuple(sorted(allowed)))


def fork_masters(topology: Topology, n: int) -> list[tuple[int, int, tuple[int, ...]]]:
    """One forking master per NUMA node: (node, its share of the n workers, the node's CPUs).

    Shares are proportional to each node's usable CPUs; nodes whose share is 0 get no master.
    """
    if n < 1:
        raise PerflabError(f"number of workers must be at least 1, got {n}")
    nodes = node_order(topology)
    shares = apportion(n, [len(cpus) for _, cpus in nodes])
    out = [(node, share, cpus) for (node, cpus), share in zip(nodes, shares) if share > 0]
    return sorted(out)


def numa_nodes_with_cpus(topology: Topology) -> list[int]:
    """Ids of the online NUMA nodes that have a usable CPU, ascending."""
    return sorted(node for node, _ in node_order(topology))


def plan_notes(topology: Topology, n: int, policy: str, threads: int = 1) -> list[str]:
    """One-line remarks a study prints about a plan (oversubscription, degenerate policies)."""
    notes = []
    ncpu = len(usable_cpus(topology))
    if policy != "none" and ncpu and n * threads > ncpu:
        what = f"{n} copies" if threads == 1 else f"{n} copies x {threads} threads"
        notes.append(f"{what} on {ncpu} usable CPUs: oversubscribed, CPUs are reused round-robin")
    n_nodes = len(numa_nodes_with_cpus(topology)) if ncpu else 0
    if policy == "numa" and n_nodes == 1:
        notes.append("1 NUMA node: numa == compact with memory bound to that node")
    if policy in ("spread", "smt-last") and not topology.smt and len(topology.sockets) <= 1 and n_nodes <= 1:
        notes.append(f"no SMT, one socket, one NUMA node: {policy} == compact")
    return notes


def describe(slot: Slot) -> str:
    """Short human text for a slot: 'cpus 0-3, mem node 1'."""
    where = f"cpu {format_cpulist(slot.cpus)}" if slot.cpus else "unbound"
    if slot.mem_node is not None:
        where += f", mem node {slot.mem_node}"
    return where
