"""The per-boot machine cache (platform/hostcache.py): its topology is the one read from the
tree while the kernel's online lists are unchanged, and is read again when they change."""

from __future__ import annotations

import os
import shutil

from perflab.platform.hostcache import capture_cached
from perflab.platform.machine import Machine
from perflab.platform.sysfs import Root
from perflab.platform.topology import Topology, read_topology


def _writable_copy(topology_root, tmp_path, name: str) -> Root:
    src = topology_root(name).path
    dst = tmp_path / "tree"
    shutil.copytree(src, dst, symlinks=True)
    boot = dst / "proc" / "sys" / "kernel" / "random"
    boot.mkdir(parents=True, exist_ok=True)
    (boot / "boot_id").write_text("5c0ffee0-0000-4000-8000-000000000001\n")  # a key to cache by
    return Root(str(dst))


def test_the_cached_topology_serves_until_cpus_go_offline(topology_root, tmp_path, monkeypatch):
    monkeypatch.setenv("PERFLAB_CACHE", str(tmp_path / "cache"))
    root = _writable_copy(topology_root, tmp_path, "16em64t-4s2c2t-offlines")
    first = capture_cached(root)
    assert len(list((tmp_path / "cache" / "host").iterdir())) == 1

    # Per-CPU files the reader needs are gone: a topology read again would have no caches.
    for cpu in first.topology.cpu_ids:
        shutil.rmtree(root.join(f"sys/devices/system/cpu/cpu{cpu}/cache"))
    assert first.topology.caches and not read_topology(root).caches
    second = capture_cached(root)
    assert second.record() == first.record()  # recorded as stored, before any Topology is built
    assert second.topology == first.topology and second.metadata == first.metadata

    # CPUs go offline (the online list changes): the topology is read again, and cached again.
    online = root.join("sys/devices/system/cpu/online")
    before = first.topology.cpu_ids
    with open(online, "w") as fh:
        fh.write(f"{before[0]}-{before[3]}\n" if before[3] - before[0] == 3 else f"{before[0]}\n")
    third = capture_cached(root)
    assert third.topology == read_topology(root) and len(third.topology.cpus) < len(before)
    assert third.metadata == first.metadata  # what does not depend on the CPUs is not captured again
    assert capture_cached(root).topology == third.topology


def test_a_machine_from_its_record_records_and_builds_as_the_topology_it_came_from(topology_root):
    # perflab run records a cached machine without building its Topology (platform/machine.py):
    # the record must be the one the built Topology gives, with this process's affinity.
    topo = read_topology(topology_root("16em64t-4s2c2t-offlines"))
    stored = dict(topo.to_dict(), allowed=[0, 1, 2, 3])  # the affinity of the run that cached it
    for allowed in (None, (0,), (1, 2)):
        lazy = Machine.from_record(stored, {"hostname": "h"}, allowed)
        built = Machine(Topology.from_dict(stored, allowed), {"hostname": "h"})
        assert lazy.record() == built.record()
        assert lazy.topology == built.topology and lazy.topology.allowed == allowed
        assert lazy.record() == built.record()  # the same once built


def test_the_key_changes_with_the_topology_types(tmp_path, monkeypatch):
    # The cached record is used as Topology.to_dict() wrote it: another format (the types edited
    # under the same version) must be another key, not a record studies cannot build.
    from perflab.platform import hostcache

    root = Root(str(tmp_path))
    boot = tmp_path / "proc" / "sys" / "kernel" / "random"
    boot.mkdir(parents=True)
    (boot / "boot_id").write_text("5c0ffee0-0000-4000-8000-000000000002\n")
    source = tmp_path / "topology_types.py"
    source.write_text("# the types\n")
    monkeypatch.setattr(hostcache, "TOPOLOGY_SOURCE", str(source))
    before = hostcache.cache_key(root)
    assert hostcache.cache_key(root) == before
    st = source.stat()
    os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert hostcache.cache_key(root) != before
