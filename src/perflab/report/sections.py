"""The study builders of the workload's studies (run, cores, instances, variants): tables,
verdict and plots (see generic.py). A plot draws rows of its section's table, with the same
numbers, units, interval levels and findings (model.Plot says which rows and columns)."""

from __future__ import annotations

import statistics
from typing import Any

from perflab.report import plots
from perflab.report.generic import _cell, _plot, builder, finding, generic, levels
from perflab.report.model import Mark, Section, Table
from perflab.report.numbers import ci_of, plural, ratio_figure
from perflab.report.series_html import add_series
from perflab.studies.run.series import SERIES_METRICS
from perflab.studies.base import decode
from perflab.studies.compare.keys import measure_title
from perflab.studies.cores.result import Disturbance, level_text, with_disturbances
from perflab.studies.instances.result import InstancesResult
from perflab.studies.variants.result import VariantOutcome, VariantsResult


def ratio_cell(ratio: float | None, ci: dict | None) -> str | None:
    """A ratio with the digits its interval needs to be told from 1 ('1.004', not '1')."""
    return None if ratio is None else ratio_figure(ratio, ci)


def name_of(measure: str) -> str:
    """A measure's name without its unit: 'wall time' from 'wall time [s]'."""
    return measure_title(measure).split(" [")[0]


@builder("run")
def run_section(campaign: Any, summary: dict, measurements: list) -> Section:
    benches = [b for b in summary.get("benchmarks") or [] if b.get("summary")]
    if not benches:
        return generic(campaign, summary)
    sec = generic(campaign, {"notes": summary.get("warnings", [])})
    ranking = summary.get("ranking") or {}
    measure = ranking.get("measure") or "wall time"
    metrics = [k for k in _run_medians(benches[0].get("metrics") or {})
               if "checksum" not in k and k not in SERIES_METRICS]  # the series table shows those
    rows, marks = [], []
    for i, b in enumerate(benches):
        s, ci, rel = b["summary"], b.get("median_ci") or {}, b.get("relative")
        m = _run_medians(b.get("metrics") or {})
        is_ref = not rel or rel.get("reference", rel.get("ratio") == 1.0)
        found = "reference" if is_ref else _run_finding(rel)
        rows.append([b.get("command"), s.get("n"), s.get("median"), ci_of(ci, estimate=s.get("median")),
                     s.get("mean"), s.get("stddev"), _mean(b.get("user")), _mean(b.get("system")),
                     max(b.get("maxrss_kb") or [0])] + [m.get(k) for k in metrics]
                    + [None if is_ref else ratio_cell(rel["ratio"], rel),
                       None if is_ref else ci_of(rel, estimate=rel["ratio"]), found])
    cols = ["command", "runs", "median [s]", "CI", "mean [s]", "stddev [s]", "user [s]", "sys [s]",
            measure_title("maxrss_kb")] + metrics + [f"{measure} / reference's", "ratio CI", "finding"]
    note = _add_energy(cols, rows, [b.get("energy") for b in benches])
    title = "Wall time and the workload's metrics per command"
    sec.tables = [Table(title, cols, rows, note=note)]
    sec.verdict = summary.get("verdict") or sec.verdict
    level = levels([b.get("median_ci") for b in benches])
    _plot(sec, f"Median wall time with its CI ({level})", lambda: plots.estimates(
        [str(b.get("command"))[:30] for b in benches], [b["summary"]["median"] for b in benches],
        [(b.get("median_ci") or {}).get("low") for b in benches],
        [(b.get("median_ci") or {}).get("high") for b in benches], ylabel=measure_title("wall_s"), level=level),
        source=title, column="median [s]", unit="s", level=level,
        marks=[Mark(i, b["summary"]["median"], plots.ESTIMATE) for i, b in enumerate(benches)])
    others = [(i, b) for i, b in enumerate(benches) if rows[i][-1] != "reference"]
    if others:
        rl = levels([b["relative"] for _, b in others])
        marks = [Mark(i, b["relative"]["ratio"], rows[i][-1]) for i, b in others]
        _plot(sec, f"{measure} relative to the reference ({rl}, Moses' interval, Bonferroni; log axis)",
              lambda: plots.ratio_axis(
                  [str(b.get("command"))[:30] for _, b in others], [b["relative"]["ratio"] for _, b in others],
                  [b["relative"]["low"] for _, b in others], [b["relative"]["high"] for _, b in others],
                  [m.status for m in marks], xlabel=f"{measure} / the reference's (log scale)", level=rl),
              source=title, column=f"{measure} / reference's", level=rl, marks=marks)
    add_series(sec, benches)
    return sec


def _run_finding(rel: dict) -> str:
    if rel.get("level") is not None and rel["level"] < rel.get("target", 0) - 1e-9:
        return plots.NOT_SIGNIFICANT  # too few runs to reach the level: nothing shown
    word = rel.get("verdict")
    if word in ("faster", "better"):
        return plots.BETTER
    if word in ("slower", "worse"):
        return plots.WORSE
    return plots.NOT_SIGNIFICANT


ENERGY_COLUMNS = ["J/run", "J/run CI", "J/event", "J/event CI"]


def _add_energy(cols: list, rows: list[list], energies: list[dict | None]) -> str:
    """Joules per run and per event with their CIs as four more columns, where any row was
    measured; the note names the source (nothing is added where no energy was measured)."""
    if not any(energies):
        return ""
    cols.extend(ENERGY_COLUMNS)
    for row, e in zip(rows, energies):
        e = e or {}
        row.extend([e.get("joules_per_run"), ci_of(e.get("joules_per_run_ci")),
                    e.get("joules_per_event"), ci_of(e.get("joules_per_event_ci"))])
    sources = sorted({e["source"] for e in energies if e and e.get("source")})
    return f"energy: {'; '.join(sources)}; medians with order-statistic CIs at the level shown"


def _mean(xs: Any) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _run_medians(metrics: dict) -> dict:
    return {k: statistics.median([x for x in v if x is not None]) for k, v in metrics.items()
            if any(x is not None for x in v)}


@builder("cores")
def cores_section(campaign: Any, summary: dict, measurements: list) -> Section:
    sec = generic(campaign, {"notes": summary.get("notes", [])})
    cpus = summary.get("cpus") or []
    unit = summary.get("unit", "")
    sec.verdict = with_disturbances(summary.get("verdict") or "",
                                    [decode(Disturbance, x) for x in summary.get("disturbances") or []],
                                    lambda ratio: str(ratio_cell(ratio, None)))

    def found(c: dict) -> str:
        if c.get("verdict") == "failed" or c.get("ratio") is None:
            return "failed" if c.get("verdict") == "failed" else "—"
        return plots.WORSE if c.get("verdict") == "slow" else plots.NOT_SIGNIFICANT

    mde = summary.get("mde")
    detect = (f"smallest detectable slowdown {mde:.1%}" if mde is not None and mde != float("inf")
              else f"not enough evidence to detect a slowdown: {summary.get('mde_why') or 'no estimate'}")
    title = f"Per CPU: median {unit}; ratio = cost / median of the other CPUs in the same round"
    seq = summary.get("sequential") or {}
    looked = "looks" in seq  # --until-decided: each CPU's repeated interval decided, not a Holm p

    def tested(c: dict) -> object:
        if not looked:
            return c.get("p_adjusted")
        d = (seq.get("cpus") or {}).get(str(c.get("cpu")))
        if d is None:
            return "—"
        level = (c.get("ratio_ci") or {}).get("level")
        return (d.get("decision") or "cannot tell") + (f" ({level_text(level)} repeated CI)" if level else "")

    sec.tables = [Table(title, ["CPU", "socket", "core", "node", "siblings", "runs", "failed", f"median [{unit}]",
                                "CI", "cost ratio", "ratio CI", "slower in",
                                "decided (repeated CI)" if looked else "p (Holm)", "verdict", "finding"],
                        [[c.get("cpu"), c.get("socket"), c.get("core"), c.get("node"), _cell(c.get("siblings")),
                          c.get("runs"), c.get("failed"), c.get("median"), ci_of(c.get("ci"), estimate=c.get("median")),
                          ratio_cell(c.get("ratio"), c.get("ratio_ci")), ci_of(c.get("ratio_ci"), estimate=c.get("ratio")),
                          f"{c.get('slower_rounds')} of {plural(c.get('rounds'), 'round')}",
                          tested(c), c.get("verdict") or "—", found(c)] for c in cpus],
                        note=f"{plural(summary.get('rounds', 0), 'round')} ({summary.get('mode', 'sequential')}), "
                             f"stopped by {summary.get('stopped', '?')}; {detect}. Cost is the time per unit of "
                             f"work (1 / {unit} where higher is better): a ratio above 1 is slower."
                             + (f" Measured until decided: each CPU's ratio CI is its repeated interval at the "
                                f"last look's level ({len(seq['looks'])} looks, O'Brien-Fleming-type alpha "
                                f"spending, {seq.get('alpha', 0.05):.0%} over all looks and CPUs); slow: a "
                                f"slowdown of {seq.get('min_effect', 0):.0%} or more shown, ruled out: its "
                                "interval's top under that" if looked else ""))]
    ran = [(i, c) for i, c in enumerate(cpus) if c.get("ratio") is not None]
    if ran:
        lv = levels([c.get("ratio_ci") for _, c in ran])
        marks = [Mark(i, c["ratio"], found(c)) for i, c in ran]
        _plot(sec, f"Per-CPU cost against the other CPUs ({lv}; log axis; above 1: slower)", lambda: plots.ratio_axis(
            [f"CPU {c['cpu']}" for _, c in ran], [c["ratio"] for _, c in ran],
            [(c.get("ratio_ci") or {}).get("low") for _, c in ran], [(c.get("ratio_ci") or {}).get("high") for _, c in ran],
            [m.status for m in marks], xlabel="cost / the other CPUs' median cost (log scale)", level=lv),
            source=title, column="cost ratio", level=lv, marks=marks)
    return sec


@builder("instances", InstancesResult.from_dict)
def instances_section(campaign: Any, result: InstancesResult, measurements: list) -> Section:
    sec = generic(campaign, {"notes": result.notes})
    unit = result.unit
    scans = result.scans
    if scans:
        # the study's own sentence (it says "not enough evidence" where it has too few rounds)
        sec.verdict = result.verdict()
    energy_on = bool(result.energy_source)
    rows: list[list[object]] = []
    marks: list[Mark] = []
    for s in scans:
        for p in s.points:
            marks.append(Mark(len(rows), p.throughput, plots.ESTIMATE))  # type: ignore[arg-type]  # None: a failed point
            rows.append([s.policy, p.n, p.reps, p.throughput,
                         ci_of(p.ci.as_dict(), estimate=p.throughput) if p.ci else "no CI: 1 round",
                         p.per_copy, p.gain_per_copy, p.start_spread_us]
                        + ([p.watts, p.joules_per_unit] if energy_on else []))
    work = unit.split("/")[0]
    work = "copy" if work == "copies" else work.removesuffix("s") or "unit"
    energy = ["watts", f"J per {work}"] if energy_on else []
    title = f"Machine throughput against copies [{unit}]"
    sec.tables = [Table(title, ["policy", "copies", "rounds", f"throughput [{unit}]", "CI", "per copy",
                                "gain per added copy", "start spread [us]", *energy], rows,
                        note=f"energy: {result.energy_source}; fewest joules per unit of work at "
                             f"N = {result.energy_optimum_n}" if energy else "")]
    fork = result.fork or []
    if fork:
        cis = [f.ci.as_dict() if f.ci else None for f in fork]
        sec.tables.append(Table("Forked master without and with NUMA placement (as the trigger-farm study tabled it)",
                                ["workers", f"no NUMA [{unit}]", f"NUMA [{unit}]", "NUMA gain", "gain CI"],
                                [[f.n, f.no_numa, f.numa, ratio_cell(f.gain, ci), ci_of(ci, estimate=f.gain)]
                                 for f, ci in zip(fork, cis)]))
        sec.verdict = result.with_fork(sec.verdict)
    if scans:
        lv = levels([p.ci.as_dict() if p.ci else None for s in scans for p in s.points])

        def series(key: str) -> dict:
            out = {}
            for s in scans:
                pts = [p for p in s.points if getattr(p, key) is not None]
                out[s.policy] = ([p.n for p in pts], [getattr(p, key) for p in pts],
                                 [_ci_end(p, key, "low") for p in pts], [_ci_end(p, key, "high") for p in pts])
            return out

        _plot(sec, "Machine throughput against number of copies" + (f" ({lv})" if lv else " (1 round: no CI)"),
              lambda: plots.lines(series("throughput"), "copies", f"median throughput [{unit}]", level=lv, zero=True,
                                  integer_x=True),
              source=title, column=f"throughput [{unit}]", unit=unit, level=lv, marks=marks)
        _plot(sec, "Gain in throughput per added copy", lambda: plots.lines(
            series("gain_per_copy"), "copies", f"gain per added copy [{unit}]", integer_x=True,
            hline=("no gain", 0.0)))
    return sec


def _ci_end(point: Any, key: str, end: str) -> float | None:
    """A throughput point's CI end (the gain per copy has no interval)."""
    return getattr(point.ci, end) if key == "throughput" and point.ci is not None else None


@builder("variants", VariantsResult.from_dict)
def variants_section(campaign: Any, result: VariantsResult, measurements: list) -> Section:
    sec = generic(campaign, {"notes": []})  # a variants result keeps its notes per variant
    rows = result.variants
    base, primary = result.baseline, result.primary
    sec.verdict = result.verdict or f"baseline {base} only."
    if result.caveat:
        sec.notes.append(result.caveat)
    metrics = sorted({k for v in rows for k in v.estimates} - {"wall_s", "maxrss_kb", "energy_j"})

    def est(v: VariantOutcome, q: str) -> Any:
        e = v.estimates.get(q)
        return None if e is None else e.median

    def est_ci(v: VariantOutcome, q: str) -> dict | None:
        e = v.estimates.get(q)
        return None if e is None or e.ci is None else e.ci.as_dict()

    cols = ["variant", "flags", "status", "runs", "median wall [s]", "CI", measure_title("maxrss_kb"),
            "text [B]"] + [f"median {m}" for m in metrics]
    cells = [[v.name, v.flags, v.status, v.n_ok, est(v, "wall_s"), ci_of(est_ci(v, "wall_s"), estimate=est(v, "wall_s")),
              est(v, "maxrss_kb"), (v.build.sizes or {}).get("text")]
             + [est(v, m) for m in metrics] for v in rows]
    note = _add_energy(cols, cells, [v.energy for v in rows])
    sec.tables = [Table("Variants", cols, cells, note=note)]
    order = [primary] + [q for q in ("wall_s", "maxrss_kb", "energy_j") if q != primary]
    comps = [(v, c) for v in rows for q in order if (c := v.comparisons.get(q)) and v.status != "baseline"]
    if not comps:
        return sec
    seq = result.sequential is not None  # --until-decided: repeated CIs decide, p is raw
    title = (f"Each variant against the baseline {base} (paired by round; --until-decided: repeated CIs at the "
             "last look's level, Bonferroni across variants, alpha spent over the looks)" if seq else
             f"Each variant against the baseline {base} (paired by round, Holm across variants)")
    crow, marks = [], []
    for i, (v, c) in enumerate(comps):
        f = finding(c.significant, c.ratio, c.higher_is_better)
        marks.append(Mark(i, c.ratio, f))
        ci = c.ci.as_dict() if c.ci is not None else None
        crow.append([v.name, name_of(c.quantity), "higher" if c.higher_is_better else "lower",
                     ratio_cell(c.ratio, ci), ci_of(ci, estimate=c.ratio), c.p, c.pairs, f])
    sec.tables.append(Table(title, ["variant", "measure", "better is", "ratio to baseline", "CI",
                                    "p (raw, not the test)" if seq else "p (Holm)", "rounds", "finding"], crow))
    cis = [c.ci.as_dict() if c.ci is not None else None for _, c in comps]
    lv = levels(cis)
    _plot(sec, f"Variants against {base}: ratios with their {lv} (log axis centred on 1)", lambda: plots.ratio_axis(
        [f"{v.name}: {name_of(c.quantity)}" for v, c in comps], [c.ratio for _, c in comps],
        [(ci or {}).get("low") for ci in cis], [(ci or {}).get("high") for ci in cis],
        [m.status for m in marks], xlabel=f"variant / {base} (log scale)", level=lv),
        source=title, column="ratio to baseline", level=lv, marks=marks)
    return sec


# The builders of the studies that run perflab's own kernels (and the verdict helpers others
# import from here) register on import.
from perflab.report.sections_code import VERDICTS, cost_points, instances_verdict, micro_verdict  # noqa: E402,F401 - registers on import, after this module's builders; re-exported
from perflab.report import score_section  # noqa: E402,F401  (registers the score builder)
