"""`perflab run`'s section: wall time and the workload's metrics per command, each against the
reference, and the per-event series (series.py), from the RunStudyResult. A plot draws rows of
its section's table, with the same numbers, units, interval levels and findings (model.Plot says
which rows and columns)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perflab.report import plots
from perflab.report.generic import _plot, add_energy, builder, generic, levels, ratio_cell, stored
from perflab.report.html.series import add_series
from perflab.report.model import Mark, Section, Table
from perflab.report.numbers import ci_of
from perflab.studies.compare.keys import measure_title
from perflab.studies.run.result import Benchmark, RunStudyResult, verdict
from perflab.studies.run.series import SERIES_METRICS

if TYPE_CHECKING:
    from perflab.store import Campaign, Measurement


@builder("run", RunStudyResult.from_dict)
def run_section(campaign: Campaign, result: RunStudyResult, measurements: list[Measurement]) -> Section:
    benches = [b for b in result.benchmarks if b.summary]
    if not benches:
        return generic(campaign, stored(result.as_dict()))
    sec = generic(campaign, {"notes": result.warnings})
    measure = result.measure
    metrics = [k for k in benches[0].metric_medians()
               if "checksum" not in k and k not in SERIES_METRICS]  # the series table shows those
    rows, found = [], []
    for b in benches:
        s, ci, rel = b.summary or {}, b.median_ci or {}, b.relative
        m = b.metric_medians()
        # against the reference: every command but the reference itself, which has no ratio to show
        against = None if not rel or rel.get("reference", rel.get("ratio") == 1.0) else rel
        found.append("reference" if against is None else _run_finding(against))
        rows.append([b.command, s.get("n"), s.get("median"), ci_of(ci, estimate=s.get("median")),
                     s.get("mean"), s.get("stddev"), _mean(b.user), _mean(b.system),
                     max(b.maxrss_kb or [0])] + [m.get(k) for k in metrics]
                    + [None if against is None else ratio_cell(against["ratio"], against),
                       None if against is None else ci_of(against, estimate=against["ratio"]), found[-1]])
    cols = ["command", "runs", "median [s]", "CI", "mean [s]", "stddev [s]", "user [s]", "sys [s]",
            measure_title("maxrss_kb")] + metrics + [f"{measure} / reference's", "ratio CI", "finding"]
    note = add_energy(cols, rows, [b.energy for b in benches])
    title = "Wall time and the workload's metrics per command"
    sec.tables = [Table(title, cols, rows, note=note)]
    sec.verdict = verdict(result)
    level = levels([b.median_ci for b in benches])
    medians = [(b.summary or {})["median"] for b in benches]
    _plot(sec, f"Median wall time with its CI ({level})", lambda: plots.estimates(
        [b.command[:30] for b in benches], medians, [(b.median_ci or {}).get("low") for b in benches],
        [(b.median_ci or {}).get("high") for b in benches], ylabel=measure_title("wall_s"), level=level),
        source=title, column="median [s]", unit="s", level=level,
        marks=[Mark(i, m, plots.ESTIMATE) for i, m in enumerate(medians)])
    # the commands compared with the reference, each with its relative (the reference has none)
    others: list[tuple[int, Benchmark, dict]] = [(i, b, b.relative) for i, b in enumerate(benches)
                                                 if found[i] != "reference" and b.relative]
    if others:
        rl = levels([rel for _, _, rel in others])
        marks = [Mark(i, rel["ratio"], found[i]) for i, _, rel in others]
        _plot(sec, f"{measure} relative to the reference ({rl}, Moses' interval, Bonferroni; log axis)",
              lambda: plots.ratio_axis(
                  [b.command[:30] for _, b, _ in others], [rel["ratio"] for _, _, rel in others],
                  [rel["low"] for _, _, rel in others], [rel["high"] for _, _, rel in others],
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


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None
