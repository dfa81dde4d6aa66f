"""Terminal rendering of a per-core scan: the per-CPU table, the evidence and the verdict (rich).
Every line is read off the one CoresResult; the verdict is its own ``verdict`` sentence."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from perflab.platform.sysfs import format_cpulist
from perflab.stats.modes import CAUSE
from perflab.studies.cores.result import CoresResult, as_change, rounds_text

VERDICTS = {"slow": "[bold red]SLOW[/]", "intermittent": "[yellow]intermittent[/]",
            "disturbed": "[yellow]disturbed[/]", "failed": "[red]failed[/]"}


def _scale(result: CoresResult) -> tuple[float, str]:
    """Display factor and unit: seconds become ms or us where that reads better."""
    meds = [r.median for r in result.cpus if r.median is not None]
    if meds and result.unit == "s":
        top = max(meds)
        if top < 1e-3:
            return 1e6, "us"
        if top < 1:
            return 1e3, "ms"
    return 1.0, result.unit


def _num(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def render(result: CoresResult, console, workload_name: str = "") -> None:
    """Per-CPU table, the tests behind the verdict, disturbances, modes, notes and the verdict."""
    scale, unit = _scale(result)
    better = "higher" if result.higher_is_better else "lower"
    title = (f"perflab cores {workload_name} ({result.mode}): median {result.metric} per CPU [{unit}], "
             f"{better} is better; vs the rest: its {result.metric} against the median of the other CPUs "
             "in the same round")
    table = Table(title=escape(" ".join(title.split())), title_justify="left", padding=(0, 1))
    levels = sorted({f"{r.ci.level:.0%}" for r in result.cpus if r.ci is not None and r.ci.level > 0})
    rlevels = sorted({f"{r.change_ci.level:.0%}" for r in result.cpus if r.change_ci is not None})
    sockets = len({r.socket for r in result.cpus}) > 1
    smt = any(len(r.siblings) > 1 for r in result.cpus)
    counted = any(r.ipc is not None for r in result.cpus)
    cols = ["cpu", "core", *(["socket"] if sockets else []), *(["siblings"] if smt else []), "runs",
            f"median {unit}\n{'/'.join(levels) or 'no'} CI", f"vs the rest\n{'/'.join(rlevels) or 'no'} CI",
            "slower", "p Holm", *(["IPC", "GHz"] if counted else []), "verdict"]
    for col in cols:
        table.add_column(col, justify="left" if col in ("siblings", "verdict") else "right")
    for r in result.cpus:
        runs = f"{r.runs}" + (f"+{r.failed}F" if r.failed else "")
        med = "-" if r.median is None else f"{r.median * scale:.4g}"
        if r.ci is not None and r.ci.level > 0:
            med += f"\n{r.ci.low * scale:.4g}-{r.ci.high * scale:.4g}"
        change = "-" if r.change is None else f"{r.change:+.1%}"
        if r.change_ci is not None:
            change += f"\n{r.change_ci.low:+.1%}..{r.change_ci.high:+.1%}"
        slower = f"{r.slower_rounds}/{r.rounds}" if r.rounds else "-"
        p = "-" if r.p_adjusted is None else f"{r.p_adjusted:.2g}"
        table.add_row(str(r.cpu), str(r.core), *([str(r.socket)] if sockets else []),
                      *([format_cpulist(list(r.siblings))] if smt else []), runs, med, change, slower, p,
                      *([_num(r.ipc, ".2f"), _num(r.ghz, ".2f")] if counted else []),
                      VERDICTS.get(r.verdict, r.verdict))
    console.print(table)
    console.print("runs: successful (+F failed); slower: rounds in which it was slower than the rest; "
                  "verdict: SLOW only when significant and slow in nearly every round", highlight=False)
    console.print(f"{result.rounds} rounds ({result.mode}), stopped by {result.stopped}, {result.elapsed_s:.1f} s; "
                  f"{result.runs} runs, {result.failed} failed", highlight=False)
    if result.failures:
        console.print("failed runs (left out of every statistic): "
                      + ", ".join(f"{k}: {v}" for k, v in result.failures.items()), highlight=False)
    f = result.friedman
    if f and f["p_value"] == f["p_value"]:
        console.print(f"any CPU different? Friedman chi2 = {f['statistic']:.3g} over {f['rounds']} complete rounds "
                      f"and {f['cpus']} CPUs, p = {f['p_value']:.2g}", highlight=False)
    if result.noise is not None:
        console.print(f"round-to-round noise of a CPU's ratio: {result.noise:.1%} (robust SD)", highlight=False)
    if result.mde is not None and result.mde != float("inf"):
        console.print(f"smallest detectable slowdown: {result.mde:.1%} (called slow in >= 90% of scans simulated "
                      f"under this scan's own noise, {result.rounds} rounds, Holm)", highlight=False)
    elif result.mde_why:
        console.print(f"smallest detectable slowdown: none, {escape(result.mde_why)}", highlight=False)
    modes = result.modes
    if modes and modes.get("multimodal"):
        # the modes are found on costs; shown as the metric's own values, like the medians
        shares = ", ".join(f"{(1 / m['center'] if result.higher_is_better else m['center']) * scale:.4g} "
                           f"({m['share']:.0%} of runs)" for m in modes["modes"])
        console.print(f"run times have {len(modes['modes'])} modes [{unit}]: {shares} ({modes['method']}); "
                      f"{CAUSE}; the ratios above mix the modes", highlight=False)
        for r in result.cpus:
            if r.mode_shares:
                console.print(f"  CPU {r.cpu}: " + ", ".join(f"{s:.0%} of runs in mode {k + 1}"
                                                          for k, s in enumerate(r.mode_shares)), highlight=False)
    for x in result.disturbances:
        if not x.intermittent:  # an intermittent CPU is in the verdict itself
            console.print(f"CPU {x.cpu} was disturbed in {rounds_text(x.rounds)} ({result.metric} "
                          f"{as_change(x.ratio, result.higher_is_better):+.1%} there), left out of its test",
                          highlight=False)
    for note in result.notes:
        console.print(f"note: {escape(note)}", highlight=False)
    console.print(f"verdict: {escape(result.verdict)} (per-round ratios, sign test + Holm)",
                  highlight=False)
