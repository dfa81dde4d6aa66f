"""read_topology on the real machine trees of tests/data/topologies and on this machine.

Expected counts are the README's table: sockets / cores / threads / NUMA nodes / L3 groups of
the online CPUs (64amd64 follows hwloc's Bulldozer rule: 64 cores of one thread).
"""

from __future__ import annotations

import os

import pytest

from perflab.errors import PerflabError
from perflab.platform.sysfs import Root
from perflab.platform.topology import Topology, read_topology

EXPECTED = {
    "memorysidecaches": (2, 40, 80, 4, 2),
    "offline-cpu0-node0": (2, 17, 17, 1, 2),
    "64amd64-4s2n4ca2co": (4, 64, 64, 8, 8),
    "48amd64-4pa2n6c-sparse": (4, 48, 48, 8, 8),
    "40intel64-2g2n4c+pcilocality": (4, 40, 40, 4, 4),
    "20em64t-hybrid-1p6c2t+2ca4co1t": (1, 14, 20, 1, 1),
    "16em64t-4s2c2t-offlines": (4, 7, 12, 1, 4),
    "2i386-2t-hugepagesizecount": (1, 1, 2, 1, 0),
}


@pytest.fixture(scope="module")
def topo(topology_root):
    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = read_topology(topology_root(name))
        return cache[name]

    return get


def counts(t):
    return (len(t.sockets), len(t.cores), len(t.cpus), len(t.nodes), len(t.caches_of(3)))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_stored_topology_reads_back_equal(topo, name):
    # the per-boot machine cache stores to_dict() and serves from_dict() (platform/hostcache.py)
    t = topo(name)
    assert Topology.from_dict(t.to_dict(), t.allowed) == t


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_readme_counts(topo, name):
    t = topo(name)
    assert counts(t) == EXPECTED[name]
    # invariants every tree must satisfy
    assert sorted(c for core in t.cores for c in core.cpus) == list(t.cpu_ids)
    assert [c.index for c in t.cores] == list(range(len(t.cores)))
    for cpu in t.cpus:
        assert cpu.id in cpu.siblings == t.cores[cpu.core].cpus
    assert set(t.offline).isdisjoint(t.cpu_ids)
    assert t.allowed is None  # only the live machine has an affinity mask
    assert t.to_dict()["counts"]["threads"] == len(t.cpus)


def test_memorysidecaches(topo):
    t = topo("memorysidecaches")
    for cpu in t.cpus:
        assert cpu.socket == cpu.id % 2
        assert cpu.node == cpu.id % 4
        if cpu.id < 40:
            assert cpu.siblings == (cpu.id, cpu.id + 40)
    assert t.distances[(0, 2)] == 11 and t.distances[(1, 3)] == 11
    assert t.distances[(0, 1)] == 21 and t.distances[(2, 3)] == 21
    assert t.distances[(0, 0)] == 10
    assert len(t.distances) == 16
    assert t.smt


def test_offline_cpu0_node0(topo):
    t = topo("offline-cpu0-node0")
    assert t.cpu_ids == tuple(range(4, 21))
    assert t.offline == (0, 1, 2, 3, 21, 22, 23)
    assert [n.id for n in t.nodes] == [1]
    assert t.nodes[0].cpus == (5, 7, 9, 11, 13, 15, 17, 19)  # cpulist 1,3,...,23 & online
    assert t.distances == {(1, 1): 10}  # row "21 10" is written against possible nodes 0-1
    assert {c.socket for c in t.cpus if c.id % 2 == 0} == {0}
    assert any("no online NUMA node" in n for n in t.rule_notes)
    assert not t.smt
    for cache in t.caches:
        assert set(cache.cpus) <= set(t.cpu_ids)


def test_bulldozer_rule(topo):
    t = topo("64amd64-4s2n4ca2co")
    assert not t.smt and all(len(c.cpus) == 1 for c in t.cores)
    assert any("0x15" in n and "hwloc" in n for n in t.rule_notes)
    for n in t.nodes:
        assert n.cpus == tuple(range(8 * n.id, 8 * n.id + 8))
    # L2 follows shared_cpu_map (the module pair), not shared_cpu_list (one CPU)
    l2 = t.caches_of(2)
    assert len(l2) == 32 and all(len(c.cpus) == 2 for c in l2)
    assert all(len(c.cpus) == 8 for c in t.caches_of(3))


def test_48amd64_sparse_nodes(topo):
    t = topo("48amd64-4pa2n6c-sparse")
    assert [n.id for n in t.nodes] == [0, 1, 2, 33, 34, 45, 72, 73]
    assert t.nodes[3].cpus == tuple(range(18, 24))
    # row of node0: 10 16 16 22 16 22 16 22 in node-id order
    assert t.distances[(0, 33)] == 22 and t.distances[(0, 34)] == 16 and t.distances[(0, 73)] == 22
    assert t.distances[(45, 45)] == 10 and t.distances[(72, 73)] == 16
    assert len(t.distances) == 64


def test_40intel64_round_robin(topo):
    t = topo("40intel64-2g2n4c+pcilocality")
    assert all(c.socket == c.id % 4 and c.node == c.id % 4 for c in t.cpus)
    assert t.distances[(0, 1)] == 20


def test_hybrid(topo):
    t = topo("20em64t-hybrid-1p6c2t+2ca4co1t")
    sizes = sorted(len(c.cpus) for c in t.cores)
    assert sizes == [1] * 8 + [2] * 6
    assert all(len(c.cpus) == 2 for c in t.cores if c.cpus[0] < 12)
    l2 = {c.cpus: c.size_bytes for c in t.caches_of(2)}
    assert l2[(12, 13, 14, 15)] == 2048 * 1024 and l2[(16, 17, 18, 19)] == 2048 * 1024
    assert l2[(0, 1)] == 1280 * 1024
    assert t.cpu(4).max_freq_khz == 5200000 and t.cpu(12).max_freq_khz == 3900000
    assert any("6 with 2, 8 with 1 threads" in n for n in t.rule_notes)


def test_16em64t_old_kernel_masks(topo):
    t = topo("16em64t-4s2c2t-offlines")
    assert t.offline == (2, 5, 13, 14)
    assert 0 in t.cpu_ids  # cpu0 has no online file: online
    for cpu in t.cpus:
        assert cpu.socket == cpu.id % 4
        partner = cpu.id + 8 if cpu.id < 8 else cpu.id - 8
        expected = tuple(sorted({cpu.id, partner} & set(t.cpu_ids)))
        assert cpu.siblings == expected
    assert t.nodes[0].cpus == t.cpu_ids  # cpumap 0000ffff & online


def test_2i386_no_numa(topo):
    t = topo("2i386-2t-hugepagesizecount")
    assert [n.id for n in t.nodes] == [0] and t.nodes[0].cpus == (0, 1)
    assert [c.cpus for c in t.caches_of(2)] == [(0, 1)]
    assert [(c.level, c.type) for c in t.caches] == [(1, "Data"), (2, "Unified")]
    assert t.cores[0].cpus == (0, 1)


def test_live_machine():
    t = read_topology()
    assert t.allowed == tuple(sorted(os.sched_getaffinity(0)))
    assert set(t.allowed) <= set(t.cpu_ids)
    assert len(t.nodes) >= 1 and len(t.cores) >= 1
    online = Root("/").read("sys/devices/system/cpu/online")
    from perflab.platform.sysfs import parse_cpulist

    assert list(t.cpu_ids) == parse_cpulist(online)


def test_bad_root(tmp_path):
    with pytest.raises(PerflabError, match="--root"):
        read_topology(Root(str(tmp_path)))


def _write(base, rel, text):
    path = base / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_synthetic_arm_like_tree(tmp_path):
    """No model name, package id -1, lists only, NUL bytes in a cpulist, no caches, a CPU-less node."""
    _write(tmp_path, "proc/cpuinfo", "processor\t: 0\nBogoMIPS\t: 50.00\n\nprocessor\t: 1\n")
    _write(tmp_path, "sys/devices/system/cpu/online", "0-3\n")
    for cpu in range(4):
        topo = f"sys/devices/system/cpu/cpu{cpu}/topology"
        _write(tmp_path, f"{topo}/physical_package_id", "-1\n")
        _write(tmp_path, f"{topo}/core_cpus_list", f"{cpu}\n")
    _write(tmp_path, "sys/devices/system/node/online", "0-1\n")
    _write(tmp_path, "sys/devices/system/node/node0/cpulist", "0-3\x00\n")
    _write(tmp_path, "sys/devices/system/node/node0/distance", "10 20\n")
    _write(tmp_path, "sys/devices/system/node/node1/cpulist", "\n")
    _write(tmp_path, "sys/devices/system/node/node1/distance", "20 10\n")
    t = read_topology(Root(str(tmp_path)))
    assert (len(t.sockets), len(t.cores), len(t.cpus), len(t.nodes)) == (1, 4, 4, 2)
    assert t.sockets == (0,) and t.caches == ()
    assert t.nodes[1].cpus == () and t.distances[(0, 1)] == 20
    from perflab.platform.metadata import collect

    md = collect(Root(str(tmp_path)))
    assert md["cpu_model"] is None and md["logical_cpus_in_cpuinfo"] == 2
