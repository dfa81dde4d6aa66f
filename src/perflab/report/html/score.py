"""The score study's report section (HTML, Markdown): its sentence and flags are the terminal's, from
the same ScoreResult (report/terminal/score.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perflab.report.generic import builder, generic
from perflab.report.model import Section, Table
from perflab.report.terminal.score import flag_lines, score_line
from perflab.studies.score.result import ScoreResult

if TYPE_CHECKING:
    from perflab.store import Campaign, Measurement


@builder("score", ScoreResult.from_dict)
def score_section(campaign: Campaign, r: ScoreResult, measurements: list[Measurement]) -> Section:
    sec = generic(campaign, {"notes": r.notes})
    sec.verdict = f"{r.suite}: {score_line(r)}"
    level = f"{r.level:.0%} CI"
    sec.tables = [Table(
        f"Workload ratios to the reference machine ({r.reference_machine or 'not named'})",
        ["workload", "reference", "repetitions (ratio)", "median repetition", "ratio", level, "weight",
         "copies x threads"],
        [[w.name, ", ".join(f"{k} {v:g}" for k, v in w.references.items()),
          " ".join(f"{x:.4g}" for x in w.rep_ratios), ", ".join(str(i) for i in w.chosen), w.ratio,
          f"{w.ratio_ci[0]:.4g}-{w.ratio_ci[1]:.4g}" if w.ratio_ci else "-", w.weight,
          f"{w.copies} x {w.threads_per_copy or 1}" if w.copies else "-"] for w in r.workloads],
        note=f"{r.source}; interval: {r.interval_method}" if r.score_ci else f"{r.source}; {r.cannot_tell}")]
    sec.notes.extend(flag_lines(r))
    return sec
