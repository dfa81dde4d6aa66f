"""Machine topology read from a sysfs/proc tree: ``read_topology(root)``.

The data types (Cpu, Core, Node, Cache, Topology) live in platform/topology_types.py and are
importable from here too, as every study does.
"""

from __future__ import annotations


from perflab.errors import PerflabError
from perflab.platform.machine import allowed_cpus
from perflab.platform.sysfs import Root, cpuinfo_blocks, format_cpulist, parse_cpumask, parse_size
from perflab.platform.topology_types import Cache, Core, Cpu, Node, Topology

__all__ = ["Cache", "Core", "Cpu", "Node", "Topology", "allowed_cpus", "read_topology"]


# ---------------------------------------------------------------------------------------------
# Reading a sysfs tree. Rules (see tests/data/topologies/README.md and docs/machine.md):
#  * online set from cpu/online, else per-CPU cpuN/online files (missing file = online);
#  * never walk through symlinks: list cpu[0-9]+ / node[0-9]+ and read known file names only;
#  * cores are the connected groups of core_cpus / thread_siblings (mask preferred, list as
#    fallback), never (physical_package_id, core_id), which repeats across dies on AMD;
#  * AMD family 0x15/0x16 (Bulldozer..Jaguar): a "module" is reported as thread siblings, but
#    its two CPUs have separate integer cores; like hwloc we count every CPU as its own core;
#  * every mask and list is intersected with the online set.

CPU_DIR = "sys/devices/system/cpu"
NODE_DIR = "sys/devices/system/node"
_AMD_MODULE_FAMILIES = (0x15, 0x16)


def _read_set(root: Root, base: str, mask_name: str, list_name: str | None) -> set[int] | None:
    """CPUs from a hex mask file (preferred: in 64amd64 only the maps are right) or a list file."""
    text = root.read(f"{base}/{mask_name}")
    if text is not None and text.strip():
        return set(parse_cpumask(text))
    if list_name is not None:
        cpus = root.read_cpulist(f"{base}/{list_name}")
        if cpus is not None:
            return set(cpus)
    return None


def _online_cpus(root: Root, present: list[int]) -> set[int]:
    listed = root.read_cpulist(f"{CPU_DIR}/online")
    if listed is not None:
        online = set(listed)
        # A CPU without its directory cannot be described; keep those we can read.
        return online & set(present) if present else online
    out = set()
    for cpu in present:
        flag = root.read(f"{CPU_DIR}/cpu{cpu}/online")
        if flag is None or flag.strip() != "0":
            out.add(cpu)
    return out


def _amd_module_family(root: Root) -> int | None:
    for block in cpuinfo_blocks(root):
        if block.get("vendor_id") != "AuthenticAMD":
            return None
        try:
            family = int(block.get("cpu family", ""), 10)
        except ValueError:
            return None
        return family if family in _AMD_MODULE_FAMILIES else None
    return None


def _groups(members: dict[int, set[int]]) -> list[tuple[int, ...]]:
    """Connected components of the "shares a core with" relation (robust to one-sided masks)."""
    parent = {c: c for c in members}

    def find(c: int) -> int:
        while parent[c] != c:
            parent[c] = parent[parent[c]]
            c = parent[c]
        return c

    for c, sibs in members.items():
        for s in sibs:
            if s in parent:
                parent[find(s)] = find(c)
    comps: dict[int, list[int]] = {}
    for c in members:
        comps.setdefault(find(c), []).append(c)
    return sorted((tuple(sorted(v)) for v in comps.values()), key=lambda g: g[0])


def _node_ids(root: Root) -> tuple[list[int], list[int]]:
    """(online node ids that have a directory, ids the distance rows may be written against)."""
    dirs = [int(n[4:]) for n in root.listdir(NODE_DIR, r"node\d+")]
    listed = root.read_cpulist(f"{NODE_DIR}/online")
    online = listed if listed is not None else dirs
    return [n for n in online if n in dirs], dirs


def _distances(root: Root, nodes: list[int]) -> dict[tuple[int, int], int]:
    # Rows are written in ascending id order of the kernel's node set: usually the online nodes,
    # but offline-cpu0-node0 writes "21 10" for node1 alone (its possible set 0-1). Use the first
    # candidate id list whose length matches the row.
    candidates = []
    for name in ("online", "possible", "has_cpu"):
        listed = root.read_cpulist(f"{NODE_DIR}/{name}")
        if listed is not None:
            candidates.append(listed)
    candidates.append([int(n[4:]) for n in root.listdir(NODE_DIR, r"node\d+")])
    out: dict[tuple[int, int], int] = {}
    for i in nodes:
        text = root.read(f"{NODE_DIR}/node{i}/distance")
        if not text:
            continue
        row = [int(v) for v in text.split()]
        ids = next((c for c in candidates if len(c) == len(row)), None)
        if ids is None:
            continue
        for j, d in zip(ids, row):
            if j in nodes:
                out[(i, j)] = d
    return out


def _node_mem(root: Root, node: int) -> int | None:
    text = root.read(f"{NODE_DIR}/node{node}/meminfo") or ""
    for line in text.splitlines():
        parts = line.split()
        # "Node 0 MemTotal:       12345 kB"
        if len(parts) >= 4 and parts[2] == "MemTotal:":
            try:
                return int(parts[3]) * 1024
            except ValueError:
                return None
    return None


def _caches(root: Root, online: set[int]) -> list[Cache]:
    seen: dict[tuple[int, str, tuple[int, ...]], Cache] = {}
    for cpu in sorted(online):
        base = f"{CPU_DIR}/cpu{cpu}/cache"
        for idx in root.listdir(base, r"index\d+"):
            d = f"{base}/{idx}"
            level = root.read_int(f"{d}/level")
            if level is None:
                continue
            type_ = root.read(f"{d}/type") or "Unified"
            shared = _read_set(root, d, "shared_cpu_map", "shared_cpu_list") or {cpu}
            cpus = tuple(sorted((shared & online) | {cpu}))
            key = (level, type_, cpus)
            if key not in seen:
                seen[key] = Cache(
                    level=level,
                    type=type_,
                    size_bytes=parse_size(root.read(f"{d}/size")),
                    cpus=cpus,
                    line_size=root.read_int(f"{d}/coherency_line_size"),
                    ways=root.read_int(f"{d}/ways_of_associativity"),
                )
    return sorted(seen.values(), key=lambda c: (c.level, c.type, c.cpus))


def read_topology(root: Root = Root("/")) -> Topology:
    """Topology of the online CPUs of the sysfs tree under ``root`` (hwloc-compatible counts)."""
    if not root.isdir(CPU_DIR):
        raise PerflabError(
            f"{root.join(CPU_DIR)} does not exist: give --root the top directory of an unpacked "
            "sysfs snapshot (the one holding sys/ and proc/)"
        )
    notes: list[str] = [
        "cores = groups of CPUs sharing core_cpus/thread_siblings (hex mask preferred over list), "
        "not (physical_package_id, core_id)"
    ]
    present = [int(n[3:]) for n in root.listdir(CPU_DIR, r"cpu\d+")]
    online = _online_cpus(root, present)
    offline = sorted(set(present) - online)

    package: dict[int, int] = {}
    core_id: dict[int, int | None] = {}
    sib_sets: dict[int, set[int]] = {}
    max_freq: dict[int, int | None] = {}
    for cpu in sorted(online):
        topo = f"{CPU_DIR}/cpu{cpu}/topology"
        pkg = root.read_int(f"{topo}/physical_package_id", 0)
        package[cpu] = 0 if pkg is None or pkg < 0 else pkg
        core_id[cpu] = root.read_int(f"{topo}/core_id")
        sibs = _read_set(root, topo, "core_cpus", "core_cpus_list")
        if sibs is None:
            sibs = _read_set(root, topo, "thread_siblings", "thread_siblings_list")
        sib_sets[cpu] = ((sibs or set()) & online) | {cpu}
        max_freq[cpu] = root.read_int(f"{CPU_DIR}/cpu{cpu}/cpufreq/cpuinfo_max_freq")

    family = _amd_module_family(root)
    if family is not None and any(len(s) > 1 for s in sib_sets.values()):
        modules = _groups(sib_sets)
        notes.append(
            f"AMD family 0x{family:x} (Bulldozer-style modules): the kernel reports each 2-core "
            f"module as thread siblings ({len(modules)} modules); following hwloc, every CPU is "
            "counted as its own core with one thread"
        )
        sib_sets = {cpu: {cpu} for cpu in sib_sets}
    groups = _groups(sib_sets)

    # NUMA: node cpulists intersected with the online set.
    node_ids, _ = _node_ids(root)
    node_cpus: dict[int, tuple[int, ...]] = {}
    if not root.isdir(NODE_DIR) or not node_ids:
        notes.append("no NUMA information in sysfs: one node (id 0) holding every online CPU")
        node_cpus[0] = tuple(sorted(online))
        distances: dict[tuple[int, int], int] = {}
        mem: dict[int, int | None]
        mem = {0: None}
    else:
        for n in node_ids:
            base = f"{NODE_DIR}/node{n}"
            listed = root.read_cpulist(f"{base}/cpulist")
            in_node = set(listed) if listed is not None else set(parse_cpumask(root.read(f"{base}/cpumap")))
            node_cpus[n] = tuple(sorted(in_node & online))
        distances = _distances(root, node_ids)
        mem = {n: _node_mem(root, n) for n in node_ids}
    node_of: dict[int, int] = {}
    for n, cpus in node_cpus.items():
        for c in cpus:
            node_of.setdefault(c, n)
    orphans = []
    for cpu in sorted(online):
        if cpu not in node_of:
            # The CPU's own nodeM entry (read by name, not followed) names its kernel node even
            # when that node is offline (offline-cpu0-node0).
            links = root.listdir(f"{CPU_DIR}/cpu{cpu}", r"node\d+")
            node_of[cpu] = int(links[0][4:]) if links else 0
            orphans.append(cpu)
    if orphans:
        notes.append(
            f"CPUs {format_cpulist(orphans)} are in no online NUMA node; their node is the one "
            "their cpuN/nodeM entry names, which is offline"
        )

    shapes = sorted({len(g) for g in groups})
    if len(shapes) > 1:
        # Hybrid parts (P-cores with SMT beside E-cores without) or partly offlined SMT pairs:
        # per-core results must not assume every core is alike.
        desc = ", ".join(f"{sum(len(g) == k for g in groups)} with {k}" for k in reversed(shapes))
        freqs = sorted({f for f in max_freq.values() if f})
        extra = f"; max frequencies {', '.join(f'{f / 1e6:g} GHz' for f in freqs)}" if len(freqs) > 1 else ""
        notes.append(f"cores differ in thread count ({desc} threads: hybrid or partly offline){extra}")

    cores = []
    core_index: dict[int, int] = {}
    for i, cpus in enumerate(groups):
        first = cpus[0]
        cores.append(Core(index=i, socket=package[first], node=node_of[first], cpus=cpus))
        for c in cpus:
            core_index[c] = i
    cpu_objs = tuple(
        Cpu(
            id=c,
            core=core_index[c],
            socket=package[c],
            node=node_of[c],
            siblings=groups[core_index[c]],
            core_id=core_id[c],
            max_freq_khz=max_freq[c],
        )
        for c in sorted(online)
    )
    return Topology(
        cpus=cpu_objs,
        cores=tuple(cores),
        sockets=tuple(sorted(set(package.values()))),
        nodes=tuple(Node(id=n, cpus=node_cpus[n], mem_bytes=mem.get(n)) for n in sorted(node_cpus)),
        distances=distances,
        caches=tuple(_caches(root, online)),
        allowed=allowed_cpus(root),
        rule_notes=tuple(notes),
        offline=tuple(offline),
    )
