"""`perflab micro`'s section: ns per operation per ABI, and each ABI's time against the base
ABI's with its interval and finding, from the MicroResult."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perflab.report import plots
from perflab.report.generic import _plot, builder, finding, generic, levels
from perflab.report.model import Mark, Section, Table
from perflab.report.numbers import ci_of, ratio_figure
from perflab.studies.micro.study import MicroResult

if TYPE_CHECKING:
    from perflab.store import Campaign, Measurement


@builder("micro", MicroResult.from_dict)
def micro_section(campaign: Campaign, result: MicroResult, measurements: list[Measurement]) -> Section:
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
