"""Build a Report from stored campaigns: the machine first, then one section per study."""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING, Any, Sequence

from perflab import __version__
from perflab.errors import PerflabError
from perflab.report.model import Report, Section, Table
from perflab.report.html import (  # noqa: F401  (each module registers its study's section builder)
    cores, cost, frontend, instances, micro, profile, run, score, variants,
)
from perflab.report.answers import answers, workloads
from perflab.report.numbers import plural
from perflab.report.generic import build_section
from perflab.report.html.monitor import monitor_answer, monitor_section
from perflab.studies.run.series import rate_timeline
from perflab.studies.monitor import stored_result
from perflab.platform.sysfs import format_cpulist

if TYPE_CHECKING:  # the store's types for the checker: the report opens no database itself
    from perflab.store import Campaign, Store


def _counts(topo: dict) -> dict:
    """Socket/core/thread/node/L3 counts, from the stored counts or the raw lists."""
    if topo.get("counts"):
        return dict(topo["counts"])
    if not topo.get("cpus"):
        return {}
    l3 = {tuple(c.get("cpus") or ()) for c in topo.get("caches") or [] if c.get("level") == 3}
    return {"sockets": len(topo.get("sockets") or []), "cores": len(topo.get("cores") or []),
            "threads": len(topo.get("cpus") or []), "numa_nodes": len(topo.get("nodes") or []) or 1,
            "l3_groups": len(l3)}


def _cache_rows(topo: dict) -> list[list[object]]:
    """One row per cache level and type: size, instances, CPUs sharing one instance."""
    groups: dict[tuple[int, str], list[dict]] = {}
    for c in topo.get("caches") or []:
        groups.setdefault((c.get("level"), c.get("type")), []).append(c)
    rows = []
    for (level, typ), cs in sorted(groups.items(), key=lambda kv: (kv[0][0] or 0, str(kv[0][1]))):
        size = cs[0].get("size_bytes")
        rows.append([f"L{level} {typ}", f"{size // 1024} KiB" if size else "?", len(cs),
                     max(len(c.get("cpus") or ()) for c in cs)])
    return rows


_MACHINE_KEYS = ("cpu_model", "vendor", "family", "model", "stepping", "microcode", "virtualisation",
                 "kernel", "governors", "scaling_driver", "turbo", "thp", "smt_control",
                 "perf_event_paranoid", "perf_version", "compilers", "mem_total_bytes", "hugepages",
                 "loadavg", "steal")


def machine_section(host: dict, energy: Sequence[str] | None = None) -> Section:
    """The machine and its topology, from the host row a campaign points at; ``energy``: the
    sources the report's runs were measured with (rapl, perf, ipmi), said here either way, since
    a run on a machine without one says nothing of energy unless asked."""
    md = host.get("metadata") or {}
    topo = host.get("topology") or {}
    facts: list[list[object]] = [["host", host.get("hostname", "")]]
    for key in _MACHINE_KEYS:
        if md.get(key) not in (None, "", {}, []):
            facts.append([key.replace("_", " "), _flat(md[key])])
    if energy is not None:
        facts.append(["energy", f"measured by {', '.join(sorted(energy))}" if energy else
                      "not measured in these campaigns (none asked for or found; 'perflab machine' "
                      "shows this machine's sources)"])
    for name, p in (md.get("probes") or {}).items():
        if isinstance(p, dict):
            why = str(p.get("reason") or "")
            facts.append([f"probe: {name}", ("yes" if p.get("available") else "no") + (f": {why}" if why else "")])
    counts = _counts(topo)
    sec = Section(key="machine", title="Machine", verdict=_machine_sentence(host, counts), tables=[
        Table("Metadata", ["quantity", "value"], facts)])
    if counts:
        sec.tables.append(Table("Topology", [k.replace("_", " ") for k in counts], [list(counts.values())]))
    nodes = topo.get("nodes") or []
    if nodes and isinstance(nodes, list):
        sec.tables.append(Table("NUMA nodes", ["node", "CPUs", "memory [GiB]"],
                                [[n.get("id"), format_cpulist(n.get("cpus") or []),
                                  round(n["mem_bytes"] / 2**30, 1) if n.get("mem_bytes") else None]
                                 for n in nodes if isinstance(n, dict)]))
    caches = _cache_rows(topo)
    if caches:
        sec.tables.append(Table("Caches", ["cache", "size", "instances", "CPUs sharing one"], caches))
    for note in topo.get("rule_notes") or []:
        sec.notes.append(str(note))
    return sec


def state_table(campaigns: Sequence[Campaign]) -> Table | None:
    """The machine state each campaign ran under (tuned or not, each knob), where recorded."""
    rows = []
    for c in campaigns:
        ms = (getattr(c, "labels", None) or {}).get("machine_state")
        if isinstance(ms, dict):
            knobs = ms.get("knobs") or {}
            rows.append([c.id, c.study, "yes, since " + str(ms.get("since")) if ms.get("tuned") else "no",
                         ", ".join(f"{k} {v}" for k, v in knobs.items())])
    return Table("Machine state per campaign", ["campaign", "study", "tuned by perflab", "knobs"], rows) if rows else None


def _flat(v: Any) -> Any:
    if isinstance(v, dict):
        return ", ".join(f"{k}={_flat(v2)}" for k, v2 in v.items() if v2 not in (None, ""))
    if isinstance(v, (list, tuple)):
        return ", ".join(str(x) for x in v)
    return v


def _machine_sentence(host: dict, c: dict) -> str:
    md = host.get("metadata") or {}
    model = md.get("cpu_model") or "unknown CPU"
    if c:
        return (f"{host.get('hostname', 'this host')}: {model}, {plural(c.get('sockets', '?'), 'socket')}, "
                f"{plural(c.get('cores', '?'), 'core')}, {plural(c.get('threads', c.get('cpus', '?')), 'thread')}, "
                f"{plural(c.get('numa_nodes', c.get('nodes', '?')), 'NUMA node')}.")
    return f"{host.get('hostname', 'this host')}: {model}."


def select_campaigns(store: Store, ids: Sequence[int]) -> list[Campaign]:
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
    latest: dict[str, Campaign] = {}
    for c in store.campaigns():
        if c.study != "lab" and c.parent_id is None:
            latest[c.study] = c
    if not latest:
        raise PerflabError(f"no campaigns in {store.display}: run a study first (e.g. perflab lab --quick)")
    return list(latest.values())


def lab_children(store: Store, lab: Campaign) -> list[Campaign]:
    """A lab's studies in run order; of a study run twice (resume) only the newest counts."""
    latest: dict[str, Campaign] = {}
    for c in store.campaigns(parent_id=lab.id):
        latest[(lab.summary or {}).get("keys", {}).get(str(c.id), c.study)] = c
    order = (lab.summary or {}).get("order") or []
    return sorted(latest.values(), key=lambda c: order.index(c.study) if c.study in order else 99)


def build_report(store: Store, campaigns: Sequence[Campaign], title: str | None = None,
                 lab: Campaign | None = None) -> Report:
    sections: list[Section] = []
    hosts: list[dict] = []
    energy: set[str] = set()
    for c in campaigns:
        runs = store.measurements(c.id)
        sections.append(build_section(c, runs))
        energy.update(k.split(":")[0] for m in runs for k in (m.result.energy or {}))
        if c.host_id is not None and c.host_id not in [h["id"] for h in hosts]:
            try:
                hosts.append(store.host(c.host_id))
            except PerflabError:
                pass
    beside: list[tuple[Section, Any]] = []  # the machine monitor's sections and summary rows
    for c in ([lab] if lab is not None else []) + list(campaigns):
        watched = stored_result(store, c.id)
        if watched is not None:
            ids = [c.id, *(k.id for k in store.campaigns(parent_id=c.id))]
            stored = [(cid, m) for cid in ids for m in store.measurements(cid)]
            runs = [m.result for _, m in stored]
            # the event rate of runs that kept a per-event series, on the samples' clock
            blobs = {mid: b for cid in ids for mid, b in store.series(cid).items()}
            rate = rate_timeline([(m.result.start_ns, blobs[m.id]) for _, m in stored if m.id in blobs])
            sec = monitor_section(c, store.monitor_samples(c.id), runs, watched, rate=rate or None)
            beside.append((sec, monitor_answer(c, sec, watched)))
    # Studies record the host with or without its topology: prefer the fullest record.
    hosts.sort(key=lambda h: (bool(_counts(h.get("topology") or {})), len(h.get("metadata") or {})), reverse=True)
    machine = machine_section(hosts[0], sorted(energy)) if hosts else None
    if machine is not None:
        states = state_table(campaigns)
        if states is not None:
            machine.tables.append(states)
    now = _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    if title is None:
        title = _title(campaigns, hosts, lab)
    by_id = {h["id"]: h for h in hosts}
    return Report(title=title, generated=now, version=__version__,
                  machine=machine, sections=sections + [sec for sec, _ in beside],
                  answers=answers(list(campaigns), sections, by_id) + [a for _, a in beside])


def _title(campaigns: Sequence[Campaign], hosts: list[dict], lab: Campaign | None) -> str:
    """'perflab lab: minihlt on host (CPU), 2026-11-23': what was measured (every workload of a
    report of several), where and when."""
    names = workloads(list(campaigns))
    lab_w = (lab.summary or {}).get("workload") if lab is not None else None
    if lab_w and lab_w not in names:
        names.insert(0, lab_w)
    workload = ", ".join(names)
    md = hosts[0].get("metadata") or {} if hosts else {}
    where = hosts[0].get("hostname", "") if hosts else ""
    if md.get("cpu_model"):
        where += f" ({md['cpu_model']})"
    started = lab.started if lab is not None else (campaigns[0].started if campaigns else None)
    when = started.astimezone().strftime("%Y-%m-%d") if started else ""
    head = "perflab lab" if lab is not None else "perflab report"
    return f"{head}: {workload or 'stored campaigns'}" + (f" on {where}" if where else "") + (f", {when}" if when else "")
