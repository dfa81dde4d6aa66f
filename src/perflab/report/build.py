"""Build a Report from stored campaigns: the machine first, then one section per study."""

from __future__ import annotations

import datetime as _dt
from typing import Any, Sequence

from perflab import __version__
from perflab.errors import PerflabError
from perflab.report.model import Report, Section, Table
from perflab.report.sections import build_section


def machine_section(host: dict) -> Section:
    """The machine and its topology, from the host row a campaign points at."""
    md = host.get("metadata") or {}
    topo = host.get("topology") or {}
    facts: list[list[object]] = [["host", host.get("hostname", "")]]
    for key in ("cpu_model", "microcode", "kernel", "governor", "thp", "perf_event_paranoid",
                "hw_counters", "gcc", "clang", "perf_version", "mem_total_bytes", "hypervisor",
                "load", "steal"):
        if key in md and md[key] not in (None, "", {}):
            facts.append([key.replace("_", " "), _flat(md[key])])
    for key, val in md.items():
        if key not in {f[0].replace(" ", "_") for f in facts} and isinstance(val, (str, int, float)) \
                and len(facts) < 30 and key not in ("hostname",):
            facts.append([key.replace("_", " "), val])
    sec = Section(key="machine", title="Machine", verdict=_machine_sentence(host), tables=[
        Table("Metadata", ["quantity", "value"], facts)])
    counts = topo.get("counts") or {}
    if counts:
        sec.tables.append(Table("Topology", list(counts), [list(counts.values())]))
    nodes = topo.get("nodes") or []
    if nodes and isinstance(nodes, list):
        sec.tables.append(Table("NUMA nodes", ["node", "CPUs", "memory"],
                                [[n.get("id"), n.get("cpulist") or _flat(n.get("cpus")), n.get("mem_bytes")]
                                 for n in nodes if isinstance(n, dict)]))
    caches = topo.get("cache_summary") or topo.get("caches_summary") or []
    if caches and isinstance(caches, list) and isinstance(caches[0], dict):
        cols = list(caches[0])
        sec.tables.append(Table("Caches", cols, [[c.get(k) for k in cols] for c in caches]))
    for note in topo.get("rule_notes") or []:
        sec.notes.append(str(note))
    return sec


def _flat(v: Any) -> Any:
    if isinstance(v, dict):
        return ", ".join(f"{k}={v2}" for k, v2 in v.items())
    if isinstance(v, (list, tuple)):
        return ", ".join(str(x) for x in v)
    return v


def _machine_sentence(host: dict) -> str:
    md = host.get("metadata") or {}
    c = (host.get("topology") or {}).get("counts") or {}
    model = md.get("cpu_model") or "unknown CPU"
    if c:
        return (f"{host.get('hostname', 'this host')}: {model}, {c.get('sockets', '?')} socket(s), "
                f"{c.get('cores', '?')} cores, {c.get('threads', c.get('cpus', '?'))} threads, "
                f"{c.get('numa_nodes', c.get('nodes', '?'))} NUMA node(s).")
    return f"{host.get('hostname', 'this host')}: {model}."


def select_campaigns(store: Any, ids: Sequence[int]) -> list[Any]:
    """Explicit ids (a lab campaign expands to its studies), else the latest lab run, else
    the latest finished campaign of each study."""
    if ids:
        out = []
        for i in ids:
            c = store.campaign(i)
            if c.study == "lab":
                out.extend(lab_children(store, c))
            else:
                out.append(c)
        return out
    labs = [c for c in store.campaigns(study="lab")]
    if labs:
        return lab_children(store, labs[-1])
    latest: dict[str, Any] = {}
    for c in store.campaigns():
        if c.study != "lab" and c.parent_id is None:
            latest[c.study] = c
    if not latest:
        raise PerflabError(f"no campaigns in {store.display}: run a study first (e.g. perflab lab --quick)")
    return list(latest.values())


def lab_children(store: Any, lab: Any) -> list[Any]:
    """A lab's studies in run order; of a study run twice (resume) only the newest counts."""
    latest: dict[str, Any] = {}
    for c in store.campaigns(parent_id=lab.id):
        latest[(lab.summary or {}).get("keys", {}).get(str(c.id), c.study)] = c
    order = (lab.summary or {}).get("order") or []
    return sorted(latest.values(), key=lambda c: order.index(c.study) if c.study in order else 99)


def build_report(store: Any, campaigns: Sequence[Any], title: str | None = None) -> Report:
    sections: list[Section] = []
    host_id = None
    for c in campaigns:
        host_id = host_id or c.host_id
        sections.append(build_section(c, store.measurements(c.id)))
    machine = None
    if host_id is not None:
        try:
            machine = machine_section(store.host(host_id))
        except PerflabError:
            machine = None
    now = _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    return Report(title=title or "perflab report", generated=now, version=__version__,
                  machine=machine, sections=sections)
