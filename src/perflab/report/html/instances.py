"""`perflab instances`' section: machine throughput against copies per placement policy, the
forked master with and without NUMA placement, and their plots, from the InstancesResult."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from perflab.report import plots
from perflab.report.generic import _plot, builder, generic, levels, ratio_cell
from perflab.report.model import Mark, Section, Table
from perflab.report.numbers import ci_of
from perflab.studies.instances.result import InstancesResult

if TYPE_CHECKING:
    from perflab.store import Campaign, Measurement


@builder("instances", InstancesResult.from_dict)
def instances_section(campaign: Campaign, result: InstancesResult, measurements: list[Measurement]) -> Section:
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
