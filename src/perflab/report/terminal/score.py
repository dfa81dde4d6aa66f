"""Terminal rendering of a suite score (measured or imported) and of two scores compared (rich)."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from perflab.studies.score.flags import MIN_COPIES
from perflab.studies.score.result import ScoreResult


def _g(x: float | None, digits: int = 5) -> str:
    return "-" if x is None else f"{x:.{digits}g}"


def render(result: ScoreResult, console) -> None:
    """Per workload: reference, repetitions, ratio with its interval; then the score line, per core
    and per watt, the flags (disagreeing repetitions, copy groups, mismatches with the file)."""
    for note in result.notes:
        console.print(f"note: {note}", highlight=False, markup=False)
    level = f"{result.level:.0%} CI"
    table = Table(title=escape(f"perflab score {result.suite}: each workload's throughput over the reference "
                               f"machine's ({result.reference_machine or 'not named'})"), title_justify="left")
    table.add_column("workload")
    table.add_column("metric")
    table.add_column("reference", justify="right")
    table.add_column("repetitions (ratio)", justify="right")
    table.add_column("ratio", justify="right")
    table.add_column(f"ratio {level}", justify="right")
    table.add_column("weight", justify="right")
    table.add_column("copies x threads", justify="right")
    for w in result.workloads:
        reps = " ".join(("[" + f"{r:.4g}" + "]") if i in w.chosen else f"{r:.4g}"
                        for i, r in enumerate(w.rep_ratios))
        ci = f"{w.ratio_ci[0]:.4g}-{w.ratio_ci[1]:.4g}" if w.ratio_ci else "-"
        ct = f"{w.copies} x {w.threads_per_copy or 1}" if w.copies else "-"
        table.add_row(escape(w.name), escape(w.unit or ", ".join(w.references)),
                      ", ".join(_g(v) for v in w.references.values()), escape(reps), _g(w.ratio), ci,
                      _g(w.weight, 3), ct)
    console.print(table)
    console.print("[bracketed]: the median repetition, which the ratio rests on (HEPscore's rule)",
                  highlight=False, markup=False)
    console.print(score_line(result), highlight=False, markup=False)
    if result.score_ci is not None:
        console.print(f"interval: {result.interval_method}", highlight=False, markup=False)
    elif result.cannot_tell:
        console.print(f"cannot tell the score's precision: {result.cannot_tell}", highlight=False, markup=False)
    for line in flag_lines(result):
        console.print(line, highlight=False, markup=False)


def score_line(result: ScoreResult) -> str:
    """'score 872.27 (95% CI 868.6-877.6) = 355 x weighted geometric mean of 6 ratios; per core ...'."""
    if result.score is None:
        return f"score: none ({result.cannot_tell})"
    ci = (f" ({result.level:.0%} CI {result.score_ci[0]:.6g}-{result.score_ci[1]:.6g})"
          if result.score_ci else " (no interval)")
    line = (f"score {result.score:.6g}{ci} = {result.scaling:g} x the weighted geometric mean of "
            f"{len(result.workloads)} workload ratios")
    if result.score_per_core is not None:
        line += f"; {result.score_per_core:.4g} per core ({result.cores} logical CPUs)"
    else:
        line += "; per core: cannot tell (no CPU count recorded)"
    if result.score_per_watt is not None:
        line += f"; {result.score_per_watt:.4g} per watt ({result.watts:.4g} W, {result.watts_source})"
    elif result.watts_source:
        line += f"; per watt: {result.watts_source}"
    return line


def flag_lines(result: ScoreResult) -> list[str]:
    out = []
    for d in result.disagreeing:
        out.append(f"warning: {d.workload} repetition {d.rep} disagrees with the others ({d.ratio_to_others:.3f} x "
                   f"their mean, {abs(d.z):.1f} robust SDs)"
                   + ("; the score rests on it (the median repetition): rerun the workload"
                      if d.chosen else "; the median repetition the score rests on is another one"))
    for g in result.copy_groups:
        if g.groups or g.slow:
            out.append(f"copies: {g.sentence}")
    quiet = [g for g in result.copy_groups if not (g.groups or g.slow)]
    few = {g.n for g in quiet if g.n < MIN_COPIES}
    if quiet and len(few) == 1 and all(g.n < MIN_COPIES for g in quiet):
        out.append(f"copies: {few.pop()} per workload, too few to tell two speeds apart (needs {MIN_COPIES}); "
                   "run more copies (--copies) for that")
    elif quiet:
        out.append("copies: " + "; ".join(g.sentence for g in quiet))
    spread = [w for w in result.workloads if w.copy_spread]
    if spread:
        out.append("copies, slowest / median copy per repetition (the file keeps no copy's own value, so "
                   "no copy can be named): " + "; ".join(
                       f"{w.name} " + " ".join(f"{s['min'] / s['median']:.2f}" for s in w.copy_spread)
                       + f" of {int(w.copy_spread[0]['count'])}" for w in spread))
    for m in result.mismatch:
        out.append(f"mismatch: {m}")
    return out


def render_difference(a: ScoreResult, b: ScoreResult, diff: tuple[float, float, float, float] | None,
                      why: str, alpha: float, console) -> None:
    """Two hosts' scores on one suite: the ratio b/a with its interval and Welch's p."""
    console.print(f"A: {a.host.get('hostname') or a.source}: {score_line(a)}", highlight=False, markup=False)
    console.print(f"B: {b.host.get('hostname') or b.source}: {score_line(b)}", highlight=False, markup=False)
    if diff is None:
        console.print(f"cannot tell whether the scores differ: {why}", highlight=False, markup=False)
        return
    ratio, lo, hi, p = diff
    level = 1 - alpha
    verdict = (f"B's score differs from A's: {ratio:.4f} x ({level:.0%} CI {lo:.4f}-{hi:.4f}), p = {p:.2g}"
               if p < alpha else
               f"no difference shown: B/A = {ratio:.4f} ({level:.0%} CI {lo:.4f}-{hi:.4f}), p = {p:.2g}; "
               f"a difference smaller than the interval's half-width cannot be told apart: run more repetitions")
    console.print(verdict + " (Welch's t on the log scores, each from its workloads' repetitions)",
                  highlight=False, markup=False)
