"""The summary table a report opens with: per study, the question, the answer in words, its
evidence (effect with CI and level, p-value, or "not significant"), caveats, and a link."""

from __future__ import annotations

from typing import Any

from perflab.report.model import Answer, Section

QUESTIONS = {
    "run": "How long does the workload take?",
    "cores": "Is one core slower than the others?",
    "instances": "How many concurrent copies give the most throughput?",
    "variants": "Which build runs fastest or uses least memory?",
    "profile": "Where does the slowest event's time go?",
    "profile-diff": "What differs between two profiles?",
    "frontend": "Is the front end (i-cache, iTLB) the bottleneck?",
    "micro": "What do single operations cost per ABI?",
    "footprint": "Which files does the workload need?",
    "bundle": "Does the workload run from a standalone bundle?",
    "cost": "Which platform meets the rate at the lowest cost?",
}


def _ci(d: dict | None, unit: str = "", fmt: str = "{:.3g}") -> str:
    """'1.23 s [1.20, 1.25] (95% CI)' from {"low", "high", "level"}."""
    if not d or d.get("low") is None:
        return ""
    return (f"[{fmt.format(d['low'])}, {fmt.format(d['high'])}]{(' ' + unit) if unit else ''} "
            f"({d.get('level', 0.95):.0%} CI)")


def _evidence(study: str, s: dict) -> str:
    """The numbers behind a study's verdict, from its stored summary (keys it writes today)."""
    if study == "run":
        ok = [b for b in s.get("benchmarks") or [] if b.get("summary")]
        if not ok:
            return "no successful run"
        b = min(ok, key=lambda b: b["summary"]["median"])
        text = f"median {b['summary']['median']:.3g} s {_ci(b.get('median_ci'), 's')}, {b['summary']['n']} runs"
        e = b.get("energy")
        if e:
            text += f"; {e['joules_per_run']:.3g} J/run {_ci(e.get('joules_per_run_ci'), 'J')}"
            if e.get("joules_per_event") is not None:
                text += f", {e['joules_per_event']:.3g} J/event {_ci(e.get('joules_per_event_ci'), 'J')}"
        return text
    if study == "cores":
        slow = s.get("slow") or []
        if slow:
            return "; ".join(f"core {x.get('core')}: ratio {x.get('ratio', 0):.3g} {_ci(x.get('ratio_ci'))}, "
                             f"p={x.get('p_adjusted', 1):.2g} (Holm), slower in {x.get('slower_rounds')} of "
                             f"{x.get('rounds')} rounds" for x in slow)
        ps = [c.get("p_adjusted") for c in s.get("cpus") or [] if c.get("p_adjusted") is not None]
        return f"not significant (smallest Holm-adjusted p = {min(ps):.2g})" if ps else ""
    if study == "instances" and s.get("optimum_n") is not None:
        return f"{s.get('optimum_throughput', 0):.3g} {s.get('unit', '')} at {s['optimum_n']} copies"
    if study == "variants":
        parts = []
        for v in s.get("variants") or []:
            for q, c in sorted((v.get("comparisons") or {}).items()):
                if c.get("significant"):
                    parts.append(f"{v.get('name')} {q}: ratio {c.get('ratio', 0):.3g} {_ci(c.get('ci'))}, "
                                 f"p={c.get('p', 1):.2g} (Holm)")
        if parts:
            return "; ".join(parts)
        return "no variant significantly different from the baseline" if s.get("variants") else ""
    for key in ("evidence", "p_value", "p_adjusted"):
        value = s.get(key)
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            return "; ".join(str(v) for v in value)
        return str(value) if key == "evidence" else f"{key.replace('_', ' ')} {value}"
    return ""


def _caveats(study: str, s: dict, campaign: Any, host: dict | None, fallback: dict | None) -> list[str]:
    out = []
    if campaign.status != "done":
        out.append(f"campaign {campaign.status}: partial")
    if s.get("suspect_runs"):
        out.append(f"{s['suspect_runs']} runs taken while the machine was disturbed")
    if s.get("failed_runs"):
        out.append(f"{s['failed_runs']} runs failed")
    md = (host or {}).get("metadata") or {}
    probes = md.get("probes") or (fallback or {}).get("metadata", {}).get("probes") or {}
    if study in ("profile", "frontend") and probes.get("hw_counters", {}).get("available") is False:
        out.append("no hardware counters (VM without PMU)")
    if study == "instances" and len(((host or {}).get("topology") or {}).get("nodes") or []) <= 1:
        out.append("one NUMA node: placement cannot matter here")
    if study == "cores" and md.get("virtualisation"):
        out.append("virtual machine: vCPUs may move between host cores")
    return out


def answers(campaigns: list[Any], sections: list[Section], hosts: dict[int, dict]) -> list[Answer]:
    """One summary row per study section, in the report's order."""
    out = []
    # Hosts recorded by older perflab versions lack the probes: use the fullest record.
    fallback = max(hosts.values(), key=lambda h: len((h.get("metadata") or {}).get("probes") or {}), default=None)
    for camp, sec in zip(campaigns, sections):
        summary = camp.summary or {}
        out.append(Answer(QUESTIONS.get(camp.study, camp.study), sec.verdict, _evidence(camp.study, summary),
                          _caveats(camp.study, summary, camp, hosts.get(camp.host_id), fallback), sec.key))
    return out
