"""The summary table a report opens with: per study, the question, the answer in words, its
evidence (effect with CI and level, p-value, or "not significant"), caveats, and a link."""

from __future__ import annotations

from typing import Any

from perflab.report.generic import levels
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


def _evidence(study: str, s: dict) -> str:
    """The numbers behind a study's verdict, from its stored summary (keys it writes today)."""
    if study == "run":
        ok = [b for b in s.get("benchmarks") or [] if b.get("summary")]
        if not ok:
            return "no successful run"
        ref = (s.get("ranking") or {}).get("reference")
        b = next((b for b in ok if b.get("command") == ref), ok[0])
        text = f"{b.get('command')}: median {format_cell(b['summary']['median'])} s {ci_of(b.get('median_ci'), 's', b['summary']['median'])}"
        e = b.get("energy")
        if e:
            text += f"; {format_cell(e['joules_per_run'])} J/run {ci_of(e.get('joules_per_run_ci'), 'J')}"
            if e.get("joules_per_event") is not None:
                text += f", {format_cell(e['joules_per_event'])} J/event {ci_of(e.get('joules_per_event_ci'), 'J')}"
        for o in ok:
            rel = o.get("relative")
            if rel and not rel.get("reference") and rel.get("significant"):
                text += f"; {o.get('command')}: {ratio_text(rel['ratio'], rel)} of the reference"
        return text
    if study == "cores":
        slow, seq = s.get("slow") or [], s.get("sequential")
        if slow:
            return "; ".join(f"core {x.get('core')}: cost ratio {ratio_text(x.get('ratio', 0), x.get('ratio_ci'))}, "
                             + ("decided by its repeated CI (--until-decided)" if seq else
                                f"p = {x.get('p_adjusted', 1):.2g} (Holm)")
                             + f", slower in {x.get('slower_rounds')} of {plural(x.get('rounds'), 'round')}" for x in slow)
        if seq:  # measured until decided: every CPU ruled out, or cannot tell (never "not significant")
            return (f"no CPU slower by {seq.get('min_effect', 0):.0%} or more (--until-decided)" if seq.get("decided")
                    else "cannot tell within the budget (--until-decided)")
        ps = [c.get("p_adjusted") for c in s.get("cpus") or [] if c.get("p_adjusted") is not None]
        return f"not significant (smallest Holm-adjusted p = {min(ps):.2g})" if ps else ""
    if study == "instances":
        if s.get("optimum_n") is not None:
            return f"{format_cell(s.get('optimum_throughput'))} {s.get('unit', '')} at {plural(s['optimum_n'], 'copy')}"
        return "no optimum named"
    if study == "variants":
        parts = []
        for v in s.get("variants") or []:
            for q, c in sorted((v.get("comparisons") or {}).items()):
                if c.get("significant"):
                    parts.append(f"{v.get('name')} {measure_title(q).split(' [')[0]}: "
                                 f"{ratio_text(c.get('ratio', 0), c.get('ci'))}, "
                                 + ("decided by its repeated CI (--until-decided)" if c.get("sequential")
                                    else f"p = {c.get('p', 1):.2g} (Holm)"))
        if parts:
            return "; ".join(parts)
        return "no variant significantly different from the baseline" if s.get("variants") else ""
    if study == "score":
        ci = s.get("score_ci")
        return (f"score {format_cell(s.get('score'))} {ci_of({'low': ci[0], 'high': ci[1], 'level': s.get('level')})}"
                if ci else f"score {format_cell(s.get('score'))}, no interval") if s.get("score") is not None else ""
    if study == "micro":
        diffs = s.get("diffs") or []
        n = sum(1 for d in diffs if d.get("significant"))
        return f"{n} of {plural(len(diffs), 'comparison')} significant after Holm" if diffs else ""
    if study == "frontend":
        rs = s.get("ratios") or []
        return (f"{sum(1 for r in rs if r.get('helps'))} of {plural(len(rs), 'size')} where 2 MiB pages help "
                "(one-sided Wilcoxon signed-rank, Holm)") if rs else ""
    if study == "profile":
        return f"{plural(s.get('samples', 0), 'sample')} ({s.get('event', '?')})" if s.get("samples") is not None else ""
    for key in ("evidence", "p_value", "p_adjusted"):
        value = s.get(key)
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            return "; ".join(str(v) for v in value)
        return str(value) if key == "evidence" else f"{key.replace('_', ' ')} {value}"
    return ""


def basis(study: str, s: dict) -> tuple[str, bool]:
    """How much evidence the answer rests on (runs, rounds, the CI level reached), and whether the
    study itself says it is not enough to answer (instances below its rounds, cores without a
    detectable slowdown, run comparisons whose interval missed its level)."""
    if study == "run":
        ok = [b for b in s.get("benchmarks") or [] if b.get("summary")]
        rels = [b["relative"] for b in ok if b.get("relative") and not b["relative"].get("reference")]
        few = [r for r in rels if r.get("level") is not None and r["level"] < r.get("target", 0) - 1e-9]
        runs = sorted({b["summary"]["n"] for b in ok}) or [0]
        text = (plural(runs[0], "run") if len(runs) == 1 else f"{runs[0]}-{runs[-1]} runs") + (
            " per command" if len(ok) > 1 else "")
        lv = levels([b.get("median_ci") for b in ok])
        return text + (f", {lv}" if lv else ""), bool(few) or not ok
    if study == "cores":
        cpus = s.get("cpus") or []
        mde = s.get("mde")
        text = (f"{plural(s.get('rounds', 0), 'round')} x {plural(len(cpus), 'CPU')}, {plural(s.get('runs', 0), 'run')}"
                + (f", {levels([c.get('ratio_ci') for c in cpus])}" if cpus else "")
                + (f", detects a {mde:.1%} slowdown" if mde is not None and mde != float("inf") else ""))
        seq = s.get("sequential")
        if seq:  # --until-decided: thin where the budget left a CPU undecided
            return text + f", {plural(len(seq.get('looks') or []), 'look')}", not s.get("slow") and not seq.get("decided")
        return text, not s.get("slow") and (mde is None or mde == float("inf") or bool(s.get("mde_why")))
    if study == "instances":
        points = [p for sc in s.get("scans") or [] for p in sc.get("points") or []]
        reps = sorted({p.get("reps") for p in points if p.get("reps") is not None})
        if not reps:  # a scan that failed or was cut before any point: nothing to rest on
            return "no point measured", True
        per = (plural(reps[0], "round") if len(reps) == 1 else f"{reps[0]}-{reps[-1]} rounds") + " per point"
        cis = levels([p.get("ci") for p in points]) or "no CI"
        # too few rounds to name an optimum, or, at two speeds, to compare within them (rounds asked)
        thin = str(s.get("verdict", "")).startswith("not enough evidence") or s.get("rounds_needed") is not None
        return f"{per}, {plural(len(points), 'point')}, {cis}", thin
    if study == "variants":
        comps = [c for v in s.get("variants") or [] for c in (v.get("comparisons") or {}).values()]
        return (f"{plural(s.get('rounds', 0), 'round')} paired, "
                f"{plural(len(s.get('variants') or []), 'variant')}" + (f", {levels([c.get('ci') for c in comps])}"
                                                                        if comps else "")), False
    if study == "frontend":
        pts = s.get("points") or []
        reps = sorted({p.get("reps") for p in pts if p.get("reps")})
        return (f"{plural(reps[0] if len(reps) == 1 else s.get('runs', 0), 'round' if len(reps) == 1 else 'run')}"
                f"{' per size' if len(reps) == 1 else ''}, {plural(len({p.get('bytes') for p in pts}), 'size')}, "
                f"{levels([r.get('ci') for r in s.get('ratios') or []]) or 'no CI'}"), False
    if study == "micro":
        cells = s.get("cells") or []
        ns = sorted({c.get("n") for c in cells if c.get("n")})
        return (f"{plural(ns[0], 'run') if len(ns) == 1 else plural(s.get('runs', 0), 'run')}"
                f"{' per operation and ABI' if len(ns) == 1 else ''}, "
                f"{levels([d.get('ci_pct') for d in s.get('diffs') or []]) or 'no CI'}"), False
    if study == "profile":
        n = len([r for r in s.get("recordings") or [] if r.get("opened")])
        return f"{plural(n, 'window')}, {plural(s.get('samples', 0), 'sample')}", False
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
        text, short = basis(camp.study, summary)
        answer = sec.verdict
        if short and not answer.lower().startswith("not enough evidence"):
            answer = f"Not enough evidence: {answer}"
        name, builtin = program(camp)
        caveats = _caveats(camp.study, summary, camp, hosts.get(camp.host_id), fallback)
        if builtin and camp.study in KERNELS:  # the workload's own studies say so in 'measured on'
            caveats.insert(0, f"measured on perflab's built-in {name}, not on the workload")
        out.append(Answer(QUESTIONS.get(camp.study, camp.study), answer, _evidence(camp.study, summary),
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
