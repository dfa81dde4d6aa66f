"""`perflab machine`: gather topology, metadata and probes, and render them as rich text or JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from perflab.platform.metadata import collect
from perflab.platform.probes import all_probes
from perflab.platform.sysfs import Root, format_cpulist
from perflab.platform.topology import read_topology

if TYPE_CHECKING:
    from rich.table import Table


def machine_info(root: Root = Root("/"), probes: bool | None = None, extra_probes: dict | None = None,
                 energy: dict | None = None) -> dict:
    """{"topology", "metadata", "energy", "probes"} for ``root``; probes run only on the live machine.

    ``extra_probes`` (name -> probe function) adds probes that live above this layer (the ABI
    probes build programs, in perflab.kernels.abi); ``energy`` is measure.energy.describe_sources,
    which decides as ``--energy auto`` does (the meters live above this layer too).
    """
    topo = read_topology(root)
    out = {"root": root.path, "topology": topo.to_dict(), "metadata": collect(root)}
    if energy is not None:
        out["energy"] = energy
    if probes if probes is not None else root.is_live:
        found = {**all_probes(), **{k: fn() for k, fn in (extra_probes or {}).items()}}
        out["probes"] = {k: {"available": p.available, "reason": p.reason} for k, p in found.items()}
    return out


def _cache_size(n: int | None) -> str:
    """Cache sizes in the largest unit that keeps them whole (1280 KiB, not 1.2 MiB)."""
    if n is None:
        return "?"
    for unit, mult in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= mult and n % mult == 0:
            return f"{n // mult} {unit}"
    return f"{n} B"


def _size(n: int | None) -> str:
    if n is None:
        return "?"
    for unit, mult in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= mult:
            v = n / mult
            return f"{v:.1f} {unit}"
    return f"{n} B"


def _short_list(groups: list[tuple[int, ...]], limit: int = 3) -> str:
    parts = [format_cpulist(g) for g in groups[:limit]]
    if len(groups) > limit:
        parts.append("...")
    return " | ".join(parts)


def render(info: dict, console=None) -> None:
    """Print ``machine_info`` as rich tables."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    t = info["topology"]
    md = info["metadata"]
    counts = t["counts"]

    head = Table(title=f"machine ({md.get('source', info['root'])})", show_header=False, box=None)
    head.add_column(style="bold")
    head.add_column()
    model = md.get("cpu_model")
    head.add_row("CPU", str(model) if model else "?")
    head.add_row(
        "counts",
        f"{counts['sockets']} socket(s), {counts['cores']} cores, {counts['threads']} threads, "
        f"{counts['numa_nodes']} NUMA node(s), {counts['l3_groups']} L3 group(s)",
    )
    cores = [tuple(c["cpus"]) for c in t["cores"]]
    shapes: dict[int, int] = {}
    for c in cores:
        shapes[len(c)] = shapes.get(len(c), 0) + 1
    head.add_row(
        "cores",
        ", ".join(f"{n} with {k} thread{'s' if k > 1 else ''}" for k, n in sorted(shapes.items(), reverse=True)),
    )
    smt_pairs = [c for c in cores if len(c) > 1]
    head.add_row("SMT", f"yes, e.g. {_short_list(smt_pairs, 3)}" if smt_pairs else "no")
    head.add_row("online CPUs", format_cpulist([c["id"] for c in t["cpus"]]))
    head.add_row("offline CPUs", format_cpulist(t["offline"]) or "none")
    if t["allowed"] is not None:
        head.add_row("allowed (affinity)", format_cpulist(t["allowed"]))
    sockets: dict[Any, Any] = {}
    for c in t["cpus"]:
        sockets.setdefault(c["socket"], []).append(c["id"])
    head.add_row("sockets", "; ".join(f"{s}: {format_cpulist(v)}" for s, v in sorted(sockets.items())))
    console.print(head)

    nodes = Table(title="NUMA nodes")
    nodes.add_column("node", justify="right")
    nodes.add_column("CPUs")
    nodes.add_column("memory", justify="right")
    node_ids = [n["id"] for n in t["nodes"]]
    dist = t["distances"]
    nodes.add_column(f"distances to nodes {' '.join(map(str, node_ids))}")
    for n in t["nodes"]:
        row = [str(n["id"]), format_cpulist(n["cpus"]) or "-", _size(n["mem_bytes"]) if n["mem_bytes"] else "?"]
        row.append(" ".join(str(dist.get(f"{n['id']},{j}", "?")) for j in node_ids))
        nodes.add_row(*row)
    console.print(nodes)

    caches = Table(title="caches")
    for col, just in (("level", "right"), ("type", "left"), ("size", "right"), ("instances", "right"),
                      ("CPUs each", "right"), ("sharing", "left")):
        caches.add_column(col, justify=just)  # type: ignore[arg-type]  # rich wants a Literal; the tuple holds its words
    kinds: dict[tuple, list[dict]] = {}
    for c in t["caches"]:
        kinds.setdefault((c["level"], c["type"], c["size_bytes"]), []).append(c)
    for (level, type_, size), group in sorted(kinds.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or 0)):
        widths = sorted({len(c["cpus"]) for c in group})
        caches.add_row(
            f"L{level}", type_, _cache_size(size), str(len(group)), "/".join(map(str, widths)),
            _short_list([tuple(c["cpus"]) for c in group]),
        )
    console.print(caches)

    if t["rule_notes"]:
        console.print("[bold]rules[/bold]")
        for note in t["rule_notes"]:
            console.print(f"  - {note}")

    meta = Table(title="metadata", show_header=False)
    meta.add_column(style="bold")
    meta.add_column()
    kernel = md.get("kernel") or {}
    flags = md.get("flags") or {}
    rows = [
        ("vendor / family / model / stepping",
         f"{md.get('vendor')} / {md.get('family')} / {md.get('model')} / {md.get('stepping')}"),
        ("microcode", md.get("microcode")),
        ("flags", " ".join(f"{k}={'yes' if v else 'no'}" for k, v in flags.items())),
        ("virtualisation", md.get("virtualisation") or "none detected"),
        ("hostname", md.get("hostname")),
        ("kernel", " ".join(str(v) for v in (kernel.get("release"), kernel.get("machine")) if v)),
        ("governor", ", ".join(f"{g} ({format_cpulist(c)})" for g, c in (md.get("governors") or {}).items())
         or "no cpufreq"),
        ("turbo", md.get("turbo")),
        ("THP enabled / defrag", f"{md['thp']['enabled']} / {md['thp']['defrag']}"
         if md["thp"]["enabled"] else None),
        ("SMT control", md.get("smt_control")),
        ("perf_event_paranoid", md.get("perf_event_paranoid")),
        ("memory", _size(md.get("mem_total_bytes")) if md.get("mem_total_bytes") else None),
        ("hugepages (default size, total/free)",
         f"{_size(md['hugepages']['default_size_bytes'])}, {md['hugepages']['total']}/{md['hugepages']['free']}"
         if md["hugepages"]["default_size_bytes"] else None),
        ("load average", " ".join(f"{v:.2f}" for v in md["loadavg"]) if md.get("loadavg") else None),
        ("steal (100 ms sample / since boot)",
         " / ".join(f"{v:.2%}" if v is not None else "n/a" for v in (md.get("steal"), md.get("steal_since_boot")))),
        ("perf", md.get("perf_version")),
    ]
    rows += [(name, version) for name, version in (md.get("compilers") or {}).items()]
    for key, value in rows:
        meta.add_row(key, "n/a" if value is None else str(value))
    console.print(meta)

    if "energy" in info:
        console.print(energy_table(info["energy"]))

    if "probes" in info:
        probes = Table(title="probes")
        probes.add_column("feature")
        probes.add_column("available")
        probes.add_column("reason")
        for name, p in info["probes"].items():
            probes.add_row(name, "[green]yes[/green]" if p["available"] else "[yellow]no[/yellow]", p["reason"])
        console.print(probes)


def energy_table(energy: dict) -> "Table":
    """describe_sources as a table: what --energy auto uses, then each source, read or why not."""
    from rich.markup import escape
    from rich.table import Table

    yes, no = "[green]yes[/green]", "[yellow]no[/yellow]"
    table = Table(title="energy")
    for col in ("source", "usable", "reads / why not"):
        table.add_column(col)
    auto = energy["auto"]
    table.add_row("--energy auto", yes if auto["source"] else no,
                  escape(auto["note"].removeprefix("energy: ")))
    rapl = energy["rapl"]
    for d in rapl["domains"]:
        what = f"energy_uj, wraps at {d['max_range_uj'] / 1e6:,.0f} J" if d["readable"] else d["reason"]
        table.add_row(f"RAPL {d['key']}", yes if d["readable"] else no, escape(f"{d['zone']} {what}"))
    if not rapl["domains"]:
        table.add_row("RAPL", no, escape(rapl["reason"]))
    perf = energy["perf"]
    table.add_row("perf power events", yes if not perf["reason"] else no,
                  escape(", ".join(perf["events"]) if not perf["reason"] else perf["reason"]))
    ipmi = energy["ipmi"]
    table.add_row("IPMI (--energy ipmi)", yes if ipmi["watts"] is not None else no,
                  escape(f"{ipmi['watts']:g} W whole node, {ipmi['ipmitool']} dcmi power reading"
                         if ipmi["watts"] is not None else ipmi["reason"]))
    return table
