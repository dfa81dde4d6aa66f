"""`perflab frontend`'s section: ns per dispatch against hot code size with 4 KiB and 2 MiB text
pages, the knees and the CPU's front-end reach (or, simulated, I1 misses per dispatch), from the
FrontendResult."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perflab.report import plots
from perflab.report.generic import _plot, builder, ci_dict as _ci, generic, levels
from perflab.report.model import Mark, Section, Table
from perflab.report.numbers import ci_of, ratio_figure
from perflab.studies.frontend.result import FrontendResult

if TYPE_CHECKING:
    from perflab.store import Campaign, Measurement


def _size(b: float) -> str:
    return f"{b / 1024:.0f} KiB" if b < 2**30 else f"{b / 2**30:.0f} GiB"


@builder("frontend", FrontendResult.from_dict)
def frontend_section(campaign: Campaign, result: FrontendResult, measurements: list[Measurement]) -> Section:
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
