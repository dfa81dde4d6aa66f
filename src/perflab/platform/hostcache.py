"""A per-boot cache of the machine capture, so a short `perflab run` need not wait for it.

capture() runs compilers and perf for their versions, probes features by compiling and running
test programs, and samples steal time for 100 ms: 0.3-0.9 s, where hyperfine's whole run of
`true` takes milliseconds. What it records changes with a reboot, a new compiler or a new perflab,
so the cache is keyed by the boot id, the path and mtime of each tool it asks, perflab's version
(and its topology types' source: see TOPOLOGY_SOURCE) and the host label. What changes by the
minute (load, steal, frequency, governor) is recorded per run as the run's health, not taken from
here.

The topology is cached too: reading it takes a few files per CPU (1 ms on 2 CPUs here, 20 ms on
the 64-CPU fixture, about four times that on a 256-CPU server). Without a reboot it changes only
when CPUs or NUMA nodes go on- or offline (hotplug, SMT control), so the cached one is used while
the kernel's online lists read as they did, and read afresh (and cached again) when they do not.
The CPUs this process may use (its affinity) are never taken from the cache.
"""

from __future__ import annotations

# tempfile is imported in the functions that use it: `perflab run` starts without it
# (bench/startup.sh).
import json
import os
from typing import Any, Callable

from perflab import __version__, platform
from perflab.platform import cache_dir
from perflab.platform.machine import Machine, allowed_cpus
from perflab.platform.metadata import COMPILERS
from perflab.platform.sysfs import Root
from perflab.startup import sha256, which

# What a cached topology is checked against (see above).
ONLINE_LISTS = ("sys/devices/system/cpu/online", "sys/devices/system/node/online")
# The cached topology is handed to the store and to studies as Topology.to_dict() wrote it, not
# rebuilt on load (platform/machine.py): a file of another format must not be read. A release
# changes __version__; an edit of the types under the same version (a developer's tree) changes
# this file's mtime, which the key includes too.
TOPOLOGY_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "topology_types.py")


def _cache_dir() -> str:
    return os.path.join(cache_dir(), "host")


def cache_key(root: Root = Root("/")) -> str | None:
    """What the capture depends on, hashed; None where there is no boot id to key on."""
    boot = root.read("proc/sys/kernel/random/boot_id")
    if not boot:
        return None
    parts = [boot, __version__, os.environ.get("PERFLAB_HOST_LABEL", "")]
    try:
        parts.append(f"topology:{os.stat(TOPOLOGY_SOURCE).st_mtime_ns}")
    except OSError:  # a zipped or frozen install: the version alone
        parts.append("topology:?")
    for tool in (*COMPILERS, "perf", "numactl"):
        path = which(tool)
        try:
            parts.append(f"{path}:{os.stat(path).st_mtime_ns}" if path else f"{tool}:-")
        except OSError:
            parts.append(f"{tool}:?")
    return sha256("\n".join(parts).encode()).hexdigest()[:32]


def capture_cached(root: Root = Root("/"), extend: Callable[[Machine], Machine] = lambda m: m) -> Machine:
    """capture(), or its copy from earlier in this boot with the same tools. ``extend`` adds what
    a higher layer records with the host (the ABI probes), before it is cached."""
    key = cache_key(root)
    path = os.path.join(_cache_dir(), f"{key}.json") if key else None
    online = [root.read(p) for p in ONLINE_LISTS]
    if path and os.path.exists(path):
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
            metadata = data["metadata"]
            if data.get("online") == online and data.get("topology"):
                # built into a Topology only if a study asks (platform/machine.py)
                return Machine.from_record(data["topology"], metadata, allowed_cpus(root))
        except (OSError, ValueError, KeyError, TypeError):
            metadata = None  # a torn or old file: capture again
        if metadata is not None:  # CPUs or nodes went on- or offline since: read the topology again
            machine = Machine(platform.read_topology(root), metadata)
            _write(path, machine, online)
            return machine
    machine = extend(platform.capture(root))
    if path:
        _write(path, machine, online)
    return machine


def _write(path: str, machine: Machine, online: list[str | None]) -> None:
    import tempfile

    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump({"metadata": machine.metadata, "topology": machine.topology.to_dict(), "online": online},
                  fh, default=str)
    os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the new one


def boot_cached(name: str, compute: Callable[[], Any], root: Root = Root("/")) -> Any:
    """compute(), or its JSON value from earlier in this boot with the same tools (cache_key):
    for a probe whose answer changes only with a reboot or another tool."""
    key = cache_key(root) if root.is_live else None
    if key is None:
        return compute()
    tag = sha256(name.encode()).hexdigest()[:16]
    path = os.path.join(_cache_dir(), f"{key}-{tag}.json")
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)["value"]
    except (OSError, ValueError, KeyError, TypeError):
        pass  # not cached yet, or a torn file: probe again
    value = compute()
    import tempfile

    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump({"name": name, "value": value}, fh)
    os.replace(tmp, path)
    return value
