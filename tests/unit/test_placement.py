"""Placement plans on real machine trees (tests/data/topologies): which CPUs each copy gets and
which node its memory is bound to, for each policy and several N."""

from __future__ import annotations

import pytest

from perflab.errors import PerflabError
from perflab.platform.affinity import usable_cpus
from perflab.studies.instances.placement import (
    POLICIES,
    apportion,
    cpu_order,
    fork_masters,
    node_order,
    plan,
    plan_notes,
)


@pytest.fixture(scope="module")
def topo(topology_root):
    """name -> Topology read from the extracted fixture tree (tests/conftest.py topology_root)."""
    from perflab.platform.topology import read_topology

    cache = {}

    def get(name: str):
        if name not in cache:
            cache[name] = read_topology(topology_root(name))
        return cache[name]

    return get


def cpus_of(slots):
    return [s.cpus for s in slots]


def single(slots):
    assert all(len(s.cpus) == 1 for s in slots)
    return [s.cpus[0] for s in slots]


# --- memorysidecaches: 2 sockets x 20 cores x 2 threads, SNC2 -> 4 nodes; cpu N on socket N%2,
# node N%4, sibling N+40.

def test_sidecaches_spread_crosses_sockets_then_nodes(topo):
    t = topo("memorysidecaches")
    s2 = single(plan(t, 2, "spread"))
    assert [t.cpu(c).socket for c in s2] == [0, 1]
    s4 = single(plan(t, 4, "spread"))
    assert s4 == [0, 1, 2, 3]
    assert sorted(t.cpu(c).node for c in s4) == [0, 1, 2, 3]
    s40 = single(plan(t, 40, "spread"))
    assert len({t.cpu(c).core for c in s40}) == 40  # one thread per core before siblings
    assert single(plan(t, 41, "spread"))[40] == 40  # then cpu 0's sibling
    assert all(s.mem_node is None for s in plan(t, 8, "spread"))


def test_sidecaches_compact_keeps_siblings_adjacent(topo):
    t = topo("memorysidecaches")
    assert single(plan(t, 4, "compact")) == [0, 40, 4, 44]
    s20 = single(plan(t, 20, "compact"))
    assert {t.cpu(c).node for c in s20} == {0}  # fills node 0 (socket 0) first
    s40 = single(plan(t, 40, "compact"))
    assert {t.cpu(c).socket for c in s40} == {0}
    assert {t.cpu(c).node for c in s40} == {0, 2}


def test_sidecaches_smt_last(topo):
    t = topo("memorysidecaches")
    s40 = single(plan(t, 40, "smt-last"))
    assert len({t.cpu(c).core for c in s40}) == 40  # no two copies share a core
    assert all(c < 40 for c in s40)
    assert single(plan(t, 3, "smt-last")) == [0, 4, 8]  # compact core order, first threads
    s80 = single(plan(t, 80, "smt-last"))
    assert sorted(s80) == list(range(80))
    assert s80[40] == 40


def test_sidecaches_numa(topo):
    t = topo("memorysidecaches")
    slots = plan(t, 8, "numa")
    assert [s.mem_node for s in slots] == [0, 0, 1, 1, 2, 2, 3, 3]
    for s in slots:
        assert s.cpus == tuple(c for c in range(80) if c % 4 == s.mem_node)
    two = plan(t, 2, "numa")  # ties go to nodes on different sockets
    assert [s.mem_node for s in two] == [0, 1]
    pinned = plan(t, 8, "numa", numa_pin=True)
    assert [s.mem_node for s in pinned] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert all(len(s.cpus) == 1 and t.cpu(s.cpus[0]).node == s.mem_node for s in pinned)
    assert pinned[0].cpus != pinned[1].cpus
    assert fork_masters(t, 10) == [
        (0, 3, slots[0].cpus), (1, 3, slots[2].cpus), (2, 2, slots[4].cpus), (3, 2, slots[6].cpus)
    ]


# --- offline-cpu0-node0: CPUs 0-3 and 21-23 offline, node 0 offline, HT off.

def test_offline_cpus_never_used(topo):
    t = topo("offline-cpu0-node0")
    offline = {0, 1, 2, 3, 21, 22, 23}
    assert set(usable_cpus(t)) == set(range(4, 21))
    for policy in ("compact", "spread", "smt-last", "numa"):
        for n in (1, 5, 17, 40):
            slots = plan(t, n, policy)
            assert len(slots) == n
            used = {c for s in slots for c in s.cpus}
            assert not used & offline, (policy, n)
    # spread alternates the two sockets (even CPUs on package 0, odd on package 1)
    s4 = single(plan(t, 4, "spread"))
    assert [t.cpu(c).socket for c in s4] == [t.cpu(4).socket, t.cpu(5).socket] * 2
    # numa binds only to the online node 1 and only to its online CPUs
    numa = plan(t, 3, "numa")
    assert {s.mem_node for s in numa} == {1}
    assert numa[0].cpus == (5, 7, 9, 11, 13, 15, 17, 19)
    # oversubscription wraps around the 17 usable CPUs
    s18 = single(plan(t, 18, "compact"))
    assert s18[17] == s18[0]
    assert any("oversubscribed" in note for note in plan_notes(t, 18, "compact"))
    assert plan_notes(t, 17, "compact") == []


# --- 48amd64: 4 packages x 2 dies x 6 cores, no SMT, sparse node ids 0,1,2,33,34,45,72,73.

def test_sparse_node_ids_kept(topo):
    t = topo("48amd64-4pa2n6c-sparse")
    slots = plan(t, 8, "numa")
    assert [s.mem_node for s in slots] == [0, 1, 2, 33, 34, 45, 72, 73]
    for s, first in zip(slots, range(0, 48, 6)):
        assert s.cpus == tuple(range(first, first + 6))
    s16 = plan(t, 16, "numa")
    assert [s.mem_node for s in s16] == [n for n in (0, 1, 2, 33, 34, 45, 72, 73) for _ in (0, 1)]
    # spread: sockets take turns, then the two nodes (dies) within each socket
    s8 = single(plan(t, 8, "spread"))
    assert [t.cpu(c).socket for c in s8] == [0, 1, 2, 3, 0, 1, 2, 3]
    assert [t.cpu(c).node for c in s8] == [0, 2, 34, 72, 1, 33, 45, 73]
    assert s8 == [0, 12, 24, 36, 6, 18, 30, 42]
    assert [m[0] for m in fork_masters(t, 4)] == [0, 2, 34, 72]  # one per socket first
    assert [(m[0], m[1]) for m in fork_masters(t, 12)] == [
        (0, 2), (1, 1), (2, 2), (33, 1), (34, 2), (45, 1), (72, 2), (73, 1)
    ]
    assert single(plan(t, 48, "compact")) == list(range(48))


# --- 40intel64: 4 sockets x 10 cores, no SMT, cpu N on socket N%4 = node N%4.

def test_round_robin_numbering(topo):
    t = topo("40intel64-2g2n4c+pcilocality")
    assert single(plan(t, 4, "spread")) == [0, 1, 2, 3]
    assert single(plan(t, 4, "compact")) == [0, 4, 8, 12]  # fill socket 0 first
    assert single(plan(t, 10, "compact")) == list(range(0, 40, 4))
    assert single(plan(t, 11, "compact"))[10] == 1
    assert single(plan(t, 4, "smt-last")) == [0, 4, 8, 12]  # no SMT: smt-last == compact
    numa = plan(t, 6, "numa")
    assert [s.mem_node for s in numa] == [0, 0, 1, 1, 2, 3]
    assert numa[5].cpus == tuple(range(3, 40, 4))


# --- 64amd64: 4 sockets x 2 nodes x 8 CPUs (Bulldozer modules; the reader's rule decides SMT).

def test_bulldozer_quad_socket(topo):
    t = topo("64amd64-4s2n4ca2co")
    s4 = single(plan(t, 4, "spread"))
    assert [t.cpu(c).socket for c in s4] == [0, 1, 2, 3]
    s8 = single(plan(t, 8, "spread"))
    assert sorted(t.cpu(c).node for c in s8) == list(range(8))
    numa = plan(t, 64, "numa")
    assert [s.mem_node for s in numa] == [n for n in range(8) for _ in range(8)]
    pinned = single(plan(t, 64, "numa", numa_pin=True))
    assert sorted(pinned) == list(range(64))
    assert all(t.cpu(c).node == s.mem_node for c, s in zip(pinned, numa))
    assert single(plan(t, 8, "compact")) == list(range(8))
    for policy in ("compact", "spread", "smt-last"):
        assert sorted(single(plan(t, 64, policy))) == list(range(64))


# --- 20em64t hybrid: 6 P-cores with HT (cpu0-11) + 8 E-cores (cpu12-19), 1 node.

def test_hybrid_smt_last_and_compact(topo):
    t = topo("20em64t-hybrid-1p6c2t+2ca4co1t")
    assert single(plan(t, 4, "compact")) == [0, 1, 2, 3]
    s14 = single(plan(t, 14, "smt-last"))
    assert len({t.cpu(c).core for c in s14}) == 14
    assert set(s14) == set(range(0, 12, 2)) | set(range(12, 20))
    assert sorted(single(plan(t, 20, "smt-last"))[14:]) == list(range(1, 12, 2))
    numa = plan(t, 3, "numa")
    assert all(s.mem_node == 0 and s.cpus == tuple(range(20)) for s in numa)
    assert any("1 NUMA node" in note for note in plan_notes(t, 3, "numa"))


# --- 16em64t: 4 sockets x 2 cores x 2 threads, CPUs 2, 5, 13, 14 offline, old kernel.

def test_old_kernel_offlines(topo):
    t = topo("16em64t-4s2c2t-offlines")
    online = {0, 1, 3, 4, 6, 7, 8, 9, 10, 11, 12, 15}
    assert set(usable_cpus(t)) == online
    for policy in ("compact", "spread", "smt-last", "numa"):
        used = {c for s in plan(t, 12, policy) for c in s.cpus}
        assert used == online, policy
    s4 = single(plan(t, 4, "spread"))
    assert sorted(t.cpu(c).socket for c in s4) == [0, 1, 2, 3]
    assert single(plan(t, 2, "compact")) == [0, 8]  # siblings adjacent
    s7 = single(plan(t, 7, "smt-last"))
    assert len({t.cpu(c).core for c in s7}) == 7


def test_none_policy_and_errors(topo):
    t = topo("memorysidecaches")
    slots = plan(t, 3, "none")
    assert [(s.cpus, s.mem_node, s.affinity) for s in slots] == [((), None, None)] * 3
    with pytest.raises(PerflabError, match="choose one of"):
        plan(t, 2, "bogus")
    with pytest.raises(PerflabError, match="at least 1"):
        plan(t, 0, "compact")
    assert set(POLICIES) == {"none", "compact", "spread", "smt-last", "numa"}


def test_allowed_set_is_respected(topo):
    from dataclasses import replace

    t = replace(topo("memorysidecaches"), allowed=tuple(range(0, 80, 2)))  # only even CPUs
    assert all(c % 2 == 0 for c in single(plan(t, 40, "spread")))
    assert [n for n, _ in node_order(t)] == [0, 2]  # odd nodes have no usable CPU: skipped
    assert {s.mem_node for s in plan(t, 4, "numa")} == {0, 2}
    assert cpu_order(t, "compact")[:2] == [0, 40]


def test_apportion_largest_remainder():
    assert apportion(10, [20, 20, 20, 20]) == [3, 3, 2, 2]
    assert apportion(3, [8, 4]) == [2, 1]
    assert apportion(1, [1, 3]) == [0, 1]
    assert apportion(0, [5, 5]) == [0, 0]
    assert sum(apportion(17, [3, 5, 7])) == 17


# --- 2i386: one HT core, no NUMA directory at all (counted as node 0).

def test_no_numa_directory(topo):
    t = topo("2i386-2t-hugepagesizecount")
    assert single(plan(t, 2, "compact")) == [0, 1]
    assert single(plan(t, 3, "smt-last")) == [0, 1, 0]
    assert [(s.cpus, s.mem_node) for s in plan(t, 2, "numa")] == [((0, 1), 0), ((0, 1), 0)]
    assert fork_masters(t, 4) == [(0, 4, (0, 1))]


# --- --threads-per-copy: T CPUs per copy inside one NUMA node, cores first, then SMT siblings.

def test_threads_per_copy_sidecaches(topo):
    t = topo("memorysidecaches")  # node k: CPUs with N % 4 == k; N and N+40 are siblings
    numa = plan(t, 4, "numa", threads=4)
    assert [s.mem_node for s in numa] == [0, 1, 2, 3]
    for s in numa:
        assert len(s.cpus) == 4 and {t.cpu(c).node for c in s.cpus} == {s.mem_node}
        assert len({t.cpu(c).core for c in s.cpus}) == 4  # four cores, no sibling pair
    assert numa[0].cpus == (0, 4, 8, 12)
    compact = plan(t, 6, "compact", threads=4)
    assert [s.cpus for s in compact[:3]] == [(0, 4, 8, 12), (16, 20, 24, 28), (32, 36, 40, 44)]
    # node 0 has 10 cores: the third group takes its last 2 cores, then 2 siblings of its first ones
    assert {t.cpu(c).node for s in compact[:5] for c in s.cpus} == {0}
    assert compact[5].cpus[0] % 4 != 0  # the sixth copy opens the next node
    spread = plan(t, 4, "spread", threads=2)
    assert sorted(t.cpu(s.cpus[0]).node for s in spread) == [0, 1, 2, 3]
    assert {t.cpu(s.cpus[0]).socket for s in spread[:2]} == {0, 1}  # sockets take turns first
    assert len(plan(t, 1, "compact", threads=20)[0].cpus) == 20
    with pytest.raises(PerflabError, match="larger than a NUMA node here .*has 20 usable CPUs"):
        plan(t, 1, "compact", threads=21)
    assert plan_notes(t, 4, "compact", threads=20) == []  # 4 x 20 = the 80 CPUs exactly
    assert any("5 copies x 20 threads" in n for n in plan_notes(t, 5, "compact", threads=20))


def test_threads_per_copy_smt_and_offline(topo):
    t = topo("16em64t-4s2c2t-offlines")  # 4 sockets x 2 cores x 2 threads, CPUs 2, 5, 13, 14 offline
    slots = plan(t, 4, "compact", threads=2)
    for s in slots:
        assert len(s.cpus) == 2 and len({t.cpu(c).node for c in s.cpus}) == 1
        assert not set(s.cpus) & {2, 5, 13, 14}
    # a node with 2 cores x 2 threads: one thread of each core before a sibling
    full = [s for s in plan(t, 8, "compact", threads=2) if len({t.cpu(c).core for c in s.cpus}) == 2]
    assert full, "some copy should get two different cores"
    t2 = topo("20em64t-hybrid-1p6c2t+2ca4co1t")
    (one,) = plan(t2, 1, "compact", threads=14)
    assert len({t2.cpu(c).core for c in one.cpus}) == 14  # 14 cores before any sibling
