"""The summary table a report opens with: per study, the question, the answer in words, its
evidence (effect with CI and level, p-value, or "not significant"), caveats, and a link."""

from __future__ import annotations

from typing import Any

from perflab.report.generic import ci_dict, levels, result_of
from perflab.report.model import Answer, Section
from perflab.report.numbers import ci_of, format_cell, plural, ratio_text
from perflab.studies.compare.keys import measure_title
from perflab.workloads import BUILTIN

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
    "score": "What is the machine's suite score, and how precise is it?",
}


def _evidence(study: str, r: Any, s: dict) -> str:
    """The numbers behind a study's verdict, from its typed result ``r`` (None: a study without a
    section of its own, or a campaign without its result, whose summary ``s`` is read as stored)."""
    if study == "run" and r is not None:
        ok = [b for b in r.benchmarks if b.summary]
        if not ok:
            return "no successful run"
        ref = r.ranking.get("reference")
        b = next((b for b in ok if b.command == ref), ok[0])
        text = f"{b.command}: median {format_cell(b.summary['median'])} s {ci_of(b.median_ci, 's', b.summary['median'])}"
        e = b.energy
        if e:
            text += f"; {format_cell(e['joules_per_run'])} J/run {ci_of(e.get('joules_per_run_ci'), 'J')}"
            if e.get("joules_per_event") is not None:
                text += f", {format_cell(e['joules_per_event'])} J/event {ci_of(e.get('joules_per_event_ci'), 'J')}"
        for o in ok:
            rel = o.relative
            if rel and not rel.get("reference") and rel.get("significant"):
                text += f"; {o.command}: {ratio_text(rel['ratio'], rel)} of the reference"
        return text
    if study == "cores" and r is not None:
        seq = r.sequential
        if r.slow:
            return "; ".join(f"core {x.core}: cost ratio {ratio_text(x.ratio, ci_dict(x.ratio_ci))}, "
                             + ("decided by its repeated CI (--until-decided)" if seq else
                                f"p = {x.p_adjusted:.2g} (Holm)")
                             + f", slower in {x.slower_rounds} of {plural(x.rounds, 'round')}" for x in r.slow)
        if seq:  # measured until decided: every CPU ruled out, or cannot tell (never "not significant")
            return (f"no CPU slower by {seq.get('min_effect', 0):.0%} or more (--until-decided)" if seq.get("decided")
                    else "cannot tell within the budget (--until-decided)")
        ps = [c.p_adjusted for c in r.cpus if c.p_adjusted is not None]
        return f"not significant (smallest Holm-adjusted p = {min(ps):.2g})" if ps else ""
    if study == "instances" and r is not None:
        if r.optimum_n is not None:
            return f"{format_cell(r.optimum_throughput)} {r.unit} at {plural(r.optimum_n, 'copy')}"
        return "no optimum named"
    if study == "variants" and r is not None:
        parts = []
        for v in r.variants:
            for q, c in sorted(v.comparisons.items()):
                if c.significant:
                    parts.append(f"{v.name} {measure_title(q).split(' [')[0]}: "
                                 f"{ratio_text(c.ratio, ci_dict(c.ci))}, "
                                 + ("decided by its repeated CI (--until-decided)" if c.sequential
                                    else f"p = {c.p:.2g} (Holm)"))
        if parts:
            return "; ".join(parts)
        return "no variant significantly different from the baseline" if r.variants else ""
    if study == "score" and r is not None:
        ci = r.score_ci
        return (f"score {format_cell(r.score)} {ci_of({'low': ci[0], 'high': ci[1], 'level': r.level})}"
                if ci else f"score {format_cell(r.score)}, no interval") if r.score is not None else ""
    if study == "micro" and r is not None:
        n = sum(1 for d in r.diffs if d.significant)
        return f"{n} of {plural(len(r.diffs), 'comparison')} significant after Holm" if r.diffs else ""
    if study == "frontend" and r is not None:
        rs = r.ratios
        return (f"{sum(1 for x in rs if x.helps)} of {plural(len(rs), 'size')} where 2 MiB pages help "
                "(one-sided Wilcoxon signed-rank, Holm)") if rs else ""
    if study == "profile" and r is not None:
        return f"{plural(r.samples, 'sample')} ({r.event})"
    if study in TYPED:  # a campaign without its result: nothing to rest an answer on
        return ""
    for key in ("evidence", "p_value", "p_adjusted"):
        value = s.get(key)
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            return "; ".join(str(v) for v in value)
        return str(value) if key == "evidence" else f"{key.replace('_', ' ')} {value}"
    return ""


# The studies whose evidence and basis are read from their typed result.
TYPED = {"run", "cores", "instances", "variants", "score", "micro", "frontend", "profile"}


def basis(study: str, r: Any) -> tuple[str, bool]:
    """How much evidence the answer rests on (runs, rounds, the CI level reached), and whether the
    study itself says it is not enough to answer (instances below its rounds, cores without a
    detectable slowdown, run comparisons whose interval missed its level), from the typed result
    ``r`` (None: no result stored, which answers nothing)."""
    if r is None:
        return ("no result stored", True) if study in TYPED else ("", False)
    if study == "run":
        ok = [b for b in r.benchmarks if b.summary]
        rels = [b.relative for b in ok if b.relative and not b.relative.get("reference")]
        few = [x for x in rels if x.get("level") is not None and x["level"] < x.get("target", 0) - 1e-9]
        runs = sorted({b.summary["n"] for b in ok}) or [0]
        text = (plural(runs[0], "run") if len(runs) == 1 else f"{runs[0]}-{runs[-1]} runs") + (
            " per command" if len(ok) > 1 else "")
        lv = levels([b.median_ci for b in ok])
        return text + (f", {lv}" if lv else ""), bool(few) or not ok
    if study == "cores":
        cpus, mde = r.cpus, r.mde
        text = (f"{plural(r.rounds, 'round')} x {plural(len(cpus), 'CPU')}, {plural(r.runs, 'run')}"
                + (f", {levels([ci_dict(c.ratio_ci) for c in cpus])}" if cpus else "")
                + (f", detects a {mde:.1%} slowdown" if mde is not None and mde != float("inf") else ""))
        seq = r.sequential
        if seq:  # --until-decided: thin where the budget left a CPU undecided
            return text + f", {plural(len(seq.get('looks') or []), 'look')}", not r.slow and not seq.get("decided")
        return text, not r.slow and (mde is None or mde == float("inf") or bool(r.mde_why))
    if study == "instances":
        points = [p for sc in r.scans for p in sc.points]
        reps = sorted({p.reps for p in points if p.reps is not None})
        if not reps:  # a scan that failed or was cut before any point: nothing to rest on
            return "no point measured", True
        per = (plural(reps[0], "round") if len(reps) == 1 else f"{reps[0]}-{reps[-1]} rounds") + " per point"
        cis = levels([ci_dict(p.ci) for p in points]) or "no CI"
        # too few rounds to name an optimum, or, at two speeds, to compare within them (rounds asked)
        thin = r.verdict().startswith("not enough evidence") or r.rounds_needed is not None
        return f"{per}, {plural(len(points), 'point')}, {cis}", thin
    if study == "variants":
        comps = [c for v in r.variants for c in v.comparisons.values()]
        return (f"{plural(r.rounds, 'round')} paired, "
                f"{plural(len(r.variants), 'variant')}" + (f", {levels([ci_dict(c.ci) for c in comps])}"
                                                           if comps else "")), False
    if study == "frontend":
        pts = r.points
        reps = sorted({p.reps for p in pts if p.reps})
        return (f"{plural(reps[0] if len(reps) == 1 else r.runs, 'round' if len(reps) == 1 else 'run')}"
                f"{' per size' if len(reps) == 1 else ''}, {plural(len({p.bytes for p in pts}), 'size')}, "
                f"{levels([ci_dict(x.ci) for x in r.ratios]) or 'no CI'}"), False
    if study == "micro":
        ns = sorted({c.n for c in r.cells if c.n})
        return (f"{plural(ns[0], 'run') if len(ns) == 1 else plural(r.runs, 'run')}"
                f"{' per operation and ABI' if len(ns) == 1 else ''}, "
                f"{levels([ci_dict(d.ci_pct) for d in r.diffs]) or 'no CI'}"), False
    if study == "profile":
        n = len([x for x in r.recordings if x.get("opened")])
        return f"{plural(n, 'window')}, {plural(r.samples, 'sample')}", False
    return "", False


def _caveats(study: str, s: dict, campaign: Any, host: dict | None, fallback: dict | None) -> list[str]:
    out = []
    if campaign.status != "done":
        out.append(f"campaign {campaign.status}: partial")
    if s.get("suspect_runs"):
        out.append(f"{plural(s['suspect_runs'], 'run')} taken while the machine was disturbed")
    if s.get("failed_runs"):
        out.append(f"{plural(s['failed_runs'], 'run')} failed")
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
        result = result_of(camp)
        text, short = basis(camp.study, result)
        answer = sec.verdict
        if short and not answer.lower().startswith("not enough evidence"):
            answer = f"Not enough evidence: {answer}"
        name, builtin = program(camp)
        caveats = _caveats(camp.study, summary, camp, hosts.get(camp.host_id), fallback)
        if builtin and camp.study in KERNELS:  # the workload's own studies say so in 'measured on'
            caveats.insert(0, f"measured on perflab's built-in {name}, not on the workload")
        out.append(Answer(QUESTIONS.get(camp.study, camp.study), answer, _evidence(camp.study, result, summary),
                          caveats, sec.key, basis=text, program=name + (" (built-in)" if builtin else "")))
    return out


# The studies that measure perflab's own kernels whatever the workload is.
KERNELS = {"frontend": "front-end kernel", "micro": "microbenchmark kernels"}


def program(campaign: Any) -> tuple[str, bool]:
    """(what a campaign measured, whether that is a built-in program rather than the user's)."""
    cfg = campaign.config or {}
    if campaign.study in KERNELS:
        kind = cfg.get("kind")
        return (f"{kind} " if kind else "") + KERNELS[campaign.study], True
    w = cfg.get("workload")
    if isinstance(w, dict):
        return str(w.get("name") or "workload"), w.get("source") == "builtin" or w.get("name") in BUILTIN
    if isinstance(w, str):
        return w, w in BUILTIN
    names = [c.get("name") for c in cfg.get("commands") or [] if isinstance(c, dict) and c.get("name")]
    return (", ".join(names) or cfg.get("label") or ""), False  # type: ignore[arg-type]  # names: strings, the truthy ones


def workloads(campaigns: list[Any]) -> list[str]:
    """The user's programs a set of campaigns measured (built-in kernels left out), in order."""
    out: list[str] = []
    for c in campaigns:
        if c.study in KERNELS:
            continue
        cfg = c.config or {}
        names = [c2.get("name") for c2 in cfg.get("commands") or [] if isinstance(c2, dict)] or [program(c)[0]]
        for n in names:
            if n and n not in out:
                out.append(n)
    return out
