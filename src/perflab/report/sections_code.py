"""The study builders of where time goes and what it costs: profile, frontend, micro (perflab's
own kernels), cost; and the sentences of the summaries that store none (see generic.py)."""

from __future__ import annotations

import json
from typing import Any

from perflab.report import plots
from perflab.report.flame import flame_box
from perflab.report.generic import _plot, builder, finding, generic, levels
from perflab.report.model import Code, Mark, Plot, Section, Table
from perflab.report.numbers import ci_of, plural, ratio_figure
from perflab.store import dumps
from perflab.studies.cost.study import CostResult
from perflab.studies.frontend.result import FrontendResult
from perflab.studies.micro.study import MicroResult
from perflab.studies.profile.diff import MAX_TESTED, MIN_TESTED_SHARE


def _size(b: float) -> str:
    return f"{b / 1024:.0f} KiB" if b < 2**30 else f"{b / 2**30:.0f} GiB"


def _code(value: Any) -> Any:
    """A symbol or object name as code in the Markdown (None stays an em dash)."""
    return None if value is None else Code(value)


@builder("profile")
def profile_section(campaign: Any, summary: dict, measurements: list) -> Section:
    sec = generic(campaign, {k: v for k, v in summary.items() if k in ("verdict", "notes")})
    top = summary.get("top") or []
    counted = summary.get("instrument") == "callgrind"
    if counted:  # counts per function, not samples: the table perf's profile has would stay empty
        ev = (summary.get("count_events") or ["Ir"])[0]
        sec.tables = [Table(f"Top functions by exclusive {ev} (callgrind, mean per recording)",
                            ["share [%]", f"{ev} self", f"{ev} inclusive", "symbol", "object"],
                            [[100 * (r.get("share") or 0), (r.get("self_") or [None])[0],
                              (r.get("incl") or [None])[0], _code(r.get("symbol")), _code(r.get("obj"))]
                             for r in summary.get("count_top") or []])]
    else:
        sec.tables = [Table(f"Top functions ({summary.get('event', '?')})", ["share [%]", "samples", "symbol",
                                                                             "shared object"],
                            [[100 * (t.get("share") or 0), t.get("samples"), _code(t.get("symbol")), _code(t.get("dso"))]
                             for t in top])]
    lat = summary.get("enable_latency_us") or []
    if lat and not counted:  # callgrind's is the time to a dump, not to enabled sampling
        sec.notes.append(f"marker-to-enabled latency: {', '.join(f'{x:.0f} us' for x in lat[:6])}")
    if summary.get("event_reason"):
        sec.notes.append(str(summary["event_reason"]))
    for a in summary.get("annotations") or []:
        hint = " — front-end hint: samples pile on the first instructions" if a.get("front_end_hint") else ""
        sec.notes.append(f"{a.get('symbol')}: {100 * (a.get('head_share') or 0):.0f} % of its samples on its "
                         f"{a.get('head', 'first instructions')}{hint}")
    sec.verdict = profile_verdict(summary) or sec.verdict
    flame = summary.get("flame")
    if flame:
        k, unit = flame.get("recordings", 1), "instructions (Ir)" if counted else "samples"
        what = "exclusive instructions per call path, counted by callgrind" if counted else summary.get("event", "?")
        legend = (f"Flame graph of {int(flame['root'].get('v', 0)):,} {unit} in {plural(k, 'recording')} ({what}): "
                  "a frame's width is its count with what it called, its callers below it; click a frame to zoom "
                  "in and list its callers and callees, search by regular expression; frames under "
                  f"{100 * flame.get('min_share', 0):.1f} % left out"
                  + (f"; intervals: Student's t over the {k} recordings' shares, {100 * flame.get('level', 0.95):.0f} %"
                     if k >= 2 else ""))
        sec.plots.append(Plot("Flame graph", flame_box(flame, str(sec.key), legend, {"unit": unit}), desc=legend))
    return sec


def profile_verdict(summary: dict) -> str:
    """The profile's finding with the window named by the output lines that opened and closed it
    (the lines a reader knows), not by the patterns that matched them."""
    if summary.get("window_opened") is False or not summary.get("top"):
        return str(summary.get("verdict") or "the window never opened")
    recs = [r for r in summary.get("recordings") or [] if r.get("opened")]
    if summary.get("whole_run") or not recs:
        where = "over the whole run" if summary.get("whole_run") else ""
    else:
        r = recs[0]
        where = (f"in {plural(len(recs), 'window')} from the line '{r.get('start_line', '?')}' "
                 f"to '{r.get('stop_line') or r.get('closed_by') or 'the end'}'")
    t = summary["top"][0]
    return (f"{plural(summary.get('samples', 0), 'sample')} ({summary.get('event', '?')}) {where}; the top function "
            f"is {t.get('symbol')} with {100 * (t.get('share') or 0):.1f} % of them.").replace("  ", " ")


@builder("profile-diff")
@builder("profile_diff")  # the study name its campaigns are stored under
def profile_diff_section(campaign: Any, summary: dict, measurements: list) -> Section:
    sec = generic(campaign, summary)
    flame = summary.get("flame")
    if flame:
        a, b = summary.get("a_label", "A"), summary.get("b_label", "B")
        tested, counted = summary.get("tested"), summary.get("instrument") == "callgrind"
        test = "Welch's t on log exclusive counts" if counted else "Welch's t on shares"
        legend = (f"Differential flame graph: B's frames ({b}) at B's widths, coloured by the change of their "
                  f"inclusive share against A ({a}) (orange grew, blue shrank, deeper for more); outlined and "
                  "starred: the frames whose function's share differs by the table's test "
                  + (f"({test}, Holm at {100 * (summary.get('alpha') or 0.05):.0f} %)" if tested
                     else "(none: no test was possible)")
                  + "; dashed: only in B")
        untested = ("below its share, absent from a recording, or on one side only" if counted and tested else
                    f"under {MIN_TESTED_SHARE:.1%} of the period, or past the {MAX_TESTED} largest" if tested
                    else summary.get("test_note", "no test possible"))
        sec.plots.append(Plot("Differential flame graph", flame_box(
            flame, str(sec.key), legend, {"diff": True, "a_label": f"A ({a})", "b_label": f"B ({b})",
                                          "untested": untested, "unit": "instructions (Ir)" if counted else "samples"},
            summary.get("flame_only") or []), desc=legend))
    return sec


@builder("cost", CostResult.from_dict)
def cost_section(campaign: Any, result: CostResult, measurements: list) -> Section:
    sec = generic(campaign, json.loads(dumps(result.to_dict())))  # as stored: keys sorted
    pts, env = cost_points(result)
    if pts:
        def make() -> str:
            return plots.scatter_labeled(pts, "total power [kW]", "total cost",
                                         ("power envelope", env) if env else None)
        _plot(sec, "Cost against power", make)
    return sec


def cost_points(result: CostResult) -> tuple[list[tuple[str, float, float, bool]], float | None]:
    """(name, kW, cost, fits power and budget) per platform, and the envelope in kW."""
    pts = [(p.name, p.total_power_kw, p.total_cost, p.fits_power and p.fits_budget) for p in result.platforms]
    return pts, result.requirement.power_envelope_kw


def _ci(ci: Any) -> dict | None:
    """A CI as the report's helpers read it ({low, high, level}), None where there is none."""
    return None if ci is None else ci.as_dict()


@builder("frontend", FrontendResult.from_dict)
def frontend_section(campaign: Any, result: FrontendResult, measurements: list) -> Section:
    sec = generic(campaign, {k: v for k, v in (("verdict", result.verdict), ("notes", result.notes)) if v})
    if result.instrument:
        return frontend_simulated(sec, result)
    points = result.points
    ratios = {(r.bytes, r.cpu): r for r in result.ratios}
    by_size: dict[tuple, dict] = {}
    for p in points:
        by_size.setdefault((p.bytes, p.cpu), {})[p.mode] = p
    rows: list[list[object]] = []
    marks: list[Mark] = []
    for (b, cpu), modes in sorted(by_size.items(), key=lambda kv: (kv[0][1] or -1, kv[0][0] or 0)):
        p4, p2, r = modes.get("4k"), modes.get("2m"), ratios.get((b, cpu))
        f = (plots.BETTER if r.helps else plots.NOT_SIGNIFICANT) if r else "—"
        if r:
            marks.append(Mark(len(rows), r.ratio, f))
        m4, m2 = (p4.median_ns if p4 else None), (p2.median_ns if p2 else None)
        rows.append([_size(b or 0), cpu if cpu is not None else "any",
                     m4, ci_of(_ci(p4.ci) if p4 else None, estimate=m4), m2,
                     ci_of(_ci(p2.ci) if p2 else None, estimate=m2),
                     ratio_figure(r.ratio, _ci(r.ci)) if r else None,
                     ci_of(_ci(r.ci), estimate=r.ratio) if r else None, r.p_adjusted if r else None, f])
    title = f"ns per dispatch against hot code size ({result.kind} kernel)"
    sec.tables = [Table(title, ["code size", "CPU", "4 KiB pages [ns]", "CI", "2 MiB pages [ns]", "CI",
                                "4K / 2M time", "ratio CI", "p (Holm)", "finding: 2 MiB pages"], rows,
                        note=str(result.huge_reason or ""))]
    knees = result.knees
    sec.tables.append(Table("Knee of runtime against code size", ["pages", "CPU", "knee", "nearest reference",
                                                                  "slope before", "slope after"],
                            [[k.mode, k.cpu if k.cpu is not None else "any",
                              _size(k.knee_bytes) if k.knee_bytes else "no knee in range",
                              k.nearest, k.slope_before, k.slope_after] for k in knees]))
    refs = result.references
    if refs:
        sec.tables.append(Table("This CPU's front-end reach", ["reference", "size"],
                                [[k, _size(v)] for k, v in refs.items()]))
    anywhere = [p for p in points if p.cpu is None]
    lv = levels([_ci(p.ci) for p in anywhere])

    def make() -> str:
        series = {}
        for mode in ("4k", "2m"):
            ps = sorted((p for p in anywhere if p.mode == mode), key=lambda p: p.bytes)
            if ps:
                series[f"{mode.upper()} pages"] = ([p.bytes / 1024 for p in ps], [p.median_ns for p in ps],
                                                   [p.ci.low if p.ci else None for p in ps],
                                                   [p.ci.high if p.ci else None for p in ps])
        return plots.lines(series, "hot code size [KiB] (log scale)", "time per dispatch [ns]", logx=True,
                           vlines=reference_lines(knees, refs, [p.bytes for p in anywhere]), level=lv)

    if anywhere:
        _plot(sec, f"Runtime against code size, 4 KiB and 2 MiB text pages ({lv})", make)
    measured = [(m, rows[m.row]) for m in marks]
    if measured:
        rl = levels([_ci(r.ci) for r in ratios.values()])
        _plot(sec, f"Time with 4 KiB pages over time with 2 MiB pages ({rl}; above 1: 2 MiB pages help)",
              lambda: plots.ratio_axis([f"{row[0]}" + (f" CPU {row[1]}" if row[1] != "any" else "")
                                        for _, row in measured], [m.value for m, _ in measured],
                                       [_ratio_end(ratios, row, "low") for _, row in measured],
                                       [_ratio_end(ratios, row, "high") for _, row in measured],
                                       [m.status for m, _ in measured], "4K time / 2M time (log scale)", rl),
              source=title, column="4K / 2M time", level=rl, marks=marks)
    return sec


def frontend_simulated(sec: Section, result: FrontendResult) -> Section:
    """--instrument cachegrind: simulated misses per dispatch against code size, the I1-miss
    curve with the simulated I1 (the expected knee) and the fitted knee as vertical lines."""
    pts = sorted((p for p in result.points if p.i1_per_dispatch is not None), key=lambda p: p.bytes)
    title = (f"Simulated misses per dispatch against hot code size ({result.instrument}, cache "
             f"model {result.cache_model}, {result.cache_model_source or 'given'})")
    column = "I1 misses / dispatch"
    sec.tables = [Table(title, ["code size", column, "LL instruction misses / dispatch",
                                "instructions / dispatch", "runs", "run-to-run spread"],
                        [[_size(p.bytes), p.i1_per_dispatch, p.ll_i_per_dispatch,
                          p.ir_per_dispatch, p.reps, p.count_spread] for p in pts])]
    knees = [k for k in result.knees if k.knee_bytes]
    vlines = {"simulated I1 (expected knee)": result.expected_knee_bytes / 1024} \
        if result.expected_knee_bytes else {}
    vlines.update({"knee": k.knee_bytes / 1024 for k in knees if k.knee_bytes})
    if pts:
        _plot(sec, "I1 misses per dispatch against code size (simulated; no TLB model)",
              lambda: plots.lines({"I1 misses": ([p.bytes / 1024 for p in pts],
                                                 [p.i1_per_dispatch for p in pts])},
                                  "hot code size [KiB] (log scale)", "simulated I1 misses per dispatch",
                                  logx=True, vlines=vlines),
              source=title, column=column, marks=[Mark(i, p.i1_per_dispatch, plots.ESTIMATE)  # type: ignore[arg-type]  # pts keeps counted points
                                                  for i, p in enumerate(pts)])
    return sec


def _ratio_end(ratios: dict, row: list, end: str) -> float | None:
    for r in ratios.values():
        if _size(r.bytes or 0) == row[0] and (r.cpu if r.cpu is not None else "any") == row[1]:
            return getattr(r.ci, end) if r.ci is not None else None
    return None


def reference_lines(knees: list, refs: dict, sizes: list[float]) -> dict[str, float]:
    """Vertical lines in KiB: the L1i and L2 sizes and the 4K iTLB reach inside the scanned range,
    and the knees (frontend's KneeReport), one line (and one label) where two knees coincide."""
    if not sizes:
        return {}
    lo, hi = min(sizes) / 2, max(sizes) * 2
    out: dict[str, float] = {}
    for name, v in refs.items():
        if (name in ("L1i cache", "L2 cache") or "reach 4K" in name) and lo <= v <= hi:
            out[name] = v / 1024
    at: dict[float, list[str]] = {}
    for k in knees:
        if k.knee_bytes:
            at.setdefault(k.knee_bytes / 1024, []).append(k.mode.upper())
    for x, modes in at.items():
        out[f"knee ({', '.join(modes)} pages)"] = x
    return out


@builder("micro", MicroResult.from_dict)
def micro_section(campaign: Any, result: MicroResult, measurements: list) -> Section:
    sec = generic(campaign, {"notes": result.notes})
    abis, diffs = result.abis, result.diffs
    benches: list[str] = []
    for c in result.cells:
        if c.bench not in benches:
            benches.append(c.bench)
    val = {(c.bench, c.abi): c.median_ns for c in result.cells}
    sec.tables = [Table("ns per operation per ABI (median)", ["operation"] + [f"{a} [ns/op]" for a in abis],
                        [[b] + [val.get((b, a)) for a in abis] for b in benches])]
    for abi, why in result.skipped.items():
        sec.notes.append(f"{abi}: {why}")
    sec.verdict = result.verdict()
    if not diffs:
        return sec
    base = diffs[0].base
    title = f"Time per operation against -{base} (Holm across operations)"
    rows, marks = [], []
    for i, d in enumerate(diffs):
        ratio, ci = 1 + d.pct / 100, _ratio_ci(d.ci_pct.as_dict())
        f = finding(d.significant, ratio, False)  # time: lower is better
        marks.append(Mark(i, ratio, f))
        rows.append([d.bench, d.abi, ratio_figure(ratio, ci), ci_of(ci, estimate=ratio), d.p_adjusted, f])
    sec.tables.append(Table(title, ["operation", "ABI", f"time / -{base} time", "CI", "p (Holm)", "finding"], rows))
    cis = [_ratio_ci(d.ci_pct.as_dict()) for d in diffs]
    lv = levels([d.ci_pct.as_dict() for d in diffs])
    _plot(sec, f"Time per operation against -{base} ({lv}; log axis)", lambda: plots.ratio_axis(
        [f"{d.bench} ({d.abi})" for d in diffs], [m.value for m in marks],
        [(ci or {}).get("low") for ci in cis], [(ci or {}).get("high") for ci in cis],
        [m.status for m in marks], f"time / -{base} time (log scale)", lv),
        source=title, column=f"time / -{base} time", level=lv, marks=marks)
    return sec


def _ratio_ci(ci_pct: dict | None) -> dict | None:
    """A percentage interval as a ratio interval (a time ratio cannot go below 0)."""
    if not ci_pct or ci_pct.get("low") is None:
        return None
    return {"low": max(1e-6, 1 + ci_pct["low"] / 100), "high": 1 + ci_pct["high"] / 100,
            "level": ci_pct.get("level")}


from perflab.report.verdicts import VERDICTS, instances_verdict, micro_verdict  # noqa: E402,F401 (their old home)
