"""Which CPUs this process may use (perflab.platform.affinity.usable_cpus): the live mask, a
fixture tree's online CPUs, a topology's online CPUs within the mask it was read with."""

from __future__ import annotations

import dataclasses
import os

from perflab.platform.affinity import LIVE, usable_cpus
from perflab.platform.machine import allowed_cpus
from perflab.platform.topology import read_topology


def test_live_is_the_affinity_mask():
    assert usable_cpus() == usable_cpus(LIVE) == tuple(sorted(os.sched_getaffinity(0)))
    assert allowed_cpus(LIVE) == usable_cpus()


def test_a_fixture_tree_offers_its_online_cpus(topology_root):
    # offline-cpu0-node0: CPUs 0-3 and 21-23 offline; a tree records no process, so no mask.
    root = topology_root("offline-cpu0-node0")
    assert usable_cpus(root) == tuple(range(4, 21))
    assert allowed_cpus(root) is None


def test_a_topology_offers_its_online_cpus_within_its_mask(topology_root):
    t = read_topology(topology_root("16em64t-4s2c2t-offlines"))
    online = (0, 1, 3, 4, 6, 7, 8, 9, 10, 11, 12, 15)
    assert t.allowed is None and usable_cpus(t) == online
    # a mask naming an offline CPU (2) does not make it usable
    assert usable_cpus(dataclasses.replace(t, allowed=(1, 2, 3, 15))) == (1, 3, 15)
