"""`perflab cores`' section: per CPU its median, its cost against the other CPUs in the same
round with the interval, the test's adjusted p and the finding, from the CoresResult."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perflab.report import plots
from perflab.report.generic import _cell, _plot, builder, ci_dict, generic, levels, ratio_cell
from perflab.report.model import Mark, Section, Table
from perflab.report.numbers import ci_of, plural
from perflab.studies.cores.result import CoresResult, CpuRow, level_text, with_disturbances

if TYPE_CHECKING:
    from perflab.store import Campaign, Measurement


@builder("cores", CoresResult.from_dict)
def cores_section(campaign: Campaign, result: CoresResult, measurements: list[Measurement]) -> Section:
    sec = generic(campaign, {"notes": result.notes})
    cpus, unit = result.cpus, result.unit
    # the study's sentence with the rounds each CPU was disturbed in (the terminal prints those on
    # lines of their own), its ratios at the digits the table gives them
    sec.verdict = with_disturbances(result.verdict, result.disturbances, lambda ratio: str(ratio_cell(ratio, None)))

    def found(c: CpuRow) -> str:
        if c.verdict == "failed" or c.ratio is None:
            return "failed" if c.verdict == "failed" else "—"
        return plots.WORSE if c.verdict == "slow" else plots.NOT_SIGNIFICANT

    mde = result.mde
    detect = (f"smallest detectable slowdown {mde:.1%}" if mde is not None and mde != float("inf")
              else f"not enough evidence to detect a slowdown: {result.mde_why or 'no estimate'}")
    title = f"Per CPU: median {unit}; ratio = cost / median of the other CPUs in the same round"
    seq = result.sequential or {}
    looked = "looks" in seq  # --until-decided: each CPU's repeated interval decided, not a Holm p

    def tested(c: CpuRow) -> object:
        if not looked:
            return c.p_adjusted
        d = (seq.get("cpus") or {}).get(str(c.cpu))
        if d is None:
            return "—"
        level = c.ratio_ci.level if c.ratio_ci is not None else None
        return (d.get("decision") or "cannot tell") + (f" ({level_text(level)} repeated CI)" if level else "")

    sec.tables = [Table(title, ["CPU", "socket", "core", "node", "siblings", "runs", "failed", f"median [{unit}]",
                                "CI", "cost ratio", "ratio CI", "slower in",
                                "decided (repeated CI)" if looked else "p (Holm)", "verdict", "finding"],
                        [[c.cpu, c.socket, c.core, c.node, _cell(c.siblings), c.runs, c.failed, c.median,
                          ci_of(ci_dict(c.ci), estimate=c.median), ratio_cell(c.ratio, ci_dict(c.ratio_ci)),
                          ci_of(ci_dict(c.ratio_ci), estimate=c.ratio),
                          f"{c.slower_rounds} of {plural(c.rounds, 'round')}",
                          tested(c), c.verdict or "—", found(c)] for c in cpus],
                        note=f"{plural(result.rounds, 'round')} ({result.mode}), stopped by {result.stopped}; "
                             f"{detect}. Cost is the time per unit of work (1 / {unit} where higher is better): "
                             "a ratio above 1 is slower."
                             + (f" Measured until decided: each CPU's ratio CI is its repeated interval at the "
                                f"last look's level ({len(seq['looks'])} looks, O'Brien-Fleming-type alpha "
                                f"spending, {seq.get('alpha', 0.05):.0%} over all looks and CPUs); slow: a "
                                f"slowdown of {seq.get('min_effect', 0):.0%} or more shown, ruled out: its "
                                "interval's top under that" if looked else ""))]
    ran = [(i, c, c.ratio) for i, c in enumerate(cpus) if c.ratio is not None]
    if ran:
        lv = levels([ci_dict(c.ratio_ci) for _, c, _ in ran])
        marks = [Mark(i, ratio, found(c)) for i, c, ratio in ran]
        _plot(sec, f"Per-CPU cost against the other CPUs ({lv}; log axis; above 1: slower)", lambda: plots.ratio_axis(
            [f"CPU {c.cpu}" for _, c, _ in ran], [ratio for _, _, ratio in ran],
            [c.ratio_ci.low if c.ratio_ci else None for _, c, _ in ran],
            [c.ratio_ci.high if c.ratio_ci else None for _, c, _ in ran],
            [m.status for m in marks], xlabel="cost / the other CPUs' median cost (log scale)", level=lv),
            source=title, column="cost ratio", level=lv, marks=marks)
    return sec
