"""What the per-boot topology cache saves at every start of `perflab run`, by CPU count.

For each hwloc snapshot in tests/data/topologies (real machines' /sys trees, 2 to 80 CPUs), the
median of 20 timings of reading the topology from the tree (read_topology, what every start did)
against serving it from the cached record (Topology.from_dict on its to_dict(), what a study
that asks for the topology pays while the kernel's online lists are unchanged:
platform/hostcache.py; `perflab run`, which only records it, builds none: platform/machine.py).
Both run in this
process, interleaved; the ratio is what to read, the times move with the machine. The snapshots
sit on this machine's disk, not in sysfs, whose reads cost more.

    PYTHONPATH=src python bench/topology_cache.py
"""

from __future__ import annotations

import statistics
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from perflab.platform.sysfs import Root
from perflab.platform.topology import Topology, read_topology

TREES = Path(__file__).resolve().parent.parent / "tests" / "data" / "topologies"


def _timed(fn, n: int = 20) -> tuple[float, object]:
    times, out = [], None
    for _ in range(n):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def main() -> int:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for tarball in sorted(TREES.glob("*.tar.bz2")):
            dest = Path(tmp) / tarball.name
            dest.mkdir()
            with tarfile.open(tarball) as tf:
                tf.extractall(dest, filter="data")
            (top,) = [p for p in dest.iterdir() if p.is_dir()]
            root = Root(str(top))
            record = read_topology(root).to_dict()
            read_s, topo = _timed(lambda: read_topology(root))
            cached_s, again = _timed(lambda: Topology.from_dict(record))
            assert again == topo, tarball.name  # the cache serves the same topology
            rows.append((len(topo.cpus) + len(topo.offline), tarball.name[:-8], read_s, cached_s))
    print(f"{'CPUs':>4}  {'tree':32} {'read':>9} {'cached':>9} {'ratio':>6}")
    for cpus, name, read_s, cached_s in sorted(rows):
        print(f"{cpus:4}  {name:32} {read_s * 1e3:7.2f}ms {cached_s * 1e3:7.3f}ms {read_s / cached_s:6.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
