"""Terminal rendering of a per-core scan: the per-CPU table, the evidence and the verdict (rich)."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from perflab.platform.sysfs import format_cpulist
from perflab.stats.modes import CAUSE
from perflab.studies.cores_result import CoresResult

VERDICTS = {"slow": "[bold red]SLOW[/]", "intermittent": "[yellow]intermittent[/]",
            "disturbed": "[yellow]disturbed[/]", "failed": "[red]failed[/]"}


def _scale(result: CoresResult) -> tuple[float, str]:
    """Display factor and unit: seconds become ms or us where that reads better."""
    meds = [r.median for r in result.cpus if r.median is not None]
    if meds and (result.unit == "s" or result.unit.startswith("s per")):
        top = max(meds)
        if top < 1e-3:
            return 1e6, result.unit.replace("s", "us", 1)
        if top < 1:
            return 1e3, result.unit.replace("s", "ms", 1)
    return 1.0, result.unit


def _num(x: float | None, fmt: str) -> str:
    return "-" if x is None else format(x, fmt)


def _rounds(rounds: tuple[int, ...]) -> str:
    return ("rounds " if len(rounds) > 1 else "round ") + format_cpulist(list(rounds))


def render(result: CoresResult, console, workload_name: str = "") -> None:
    """Per-CPU table, the tests behind the verdict, disturbances, modes, notes and the verdict."""
    scale, unit = _scale(result)
    title = (f"perflab cores {workload_name} ({result.mode}): median {unit} per CPU; "
             "ratio = cost / median of the other CPUs in the same round")
    table = Table(title=escape(" ".join(title.split())), title_justify="left", padding=(0, 1))
    levels = sorted({f"{r.ci.level:.0%}" for r in result.cpus if r.ci is not None and r.ci.level > 0})
    rlevels = sorted({f"{r.ratio_ci.level:.0%}" for r in result.cpus if r.ratio_ci is not None and r.ratio_ci.level > 0})
    sockets = len({r.socket for r in result.cpus}) > 1
    smt = any(len(r.siblings) > 1 for r in result.cpus)
    counted = any(r.ipc is not None for r in result.cpus)
    cols = ["cpu", "core", *(["socket"] if sockets else []), *(["siblings"] if smt else []), "runs",
            f"median\n{'/'.join(levels) or '95%'} CI", f"ratio\n{'/'.join(rlevels) or '95%'} CI", "slower",
            "p Holm", *(["IPC", "GHz"] if counted else []), "verdict"]
    for col in cols:
        table.add_column(col, justify="left" if col in ("siblings", "verdict") else "right")
    for r in result.cpus:
        runs = f"{r.runs}" + (f"+{r.failed}F" if r.failed else "")
        med = "-" if r.median is None else f"{r.median * scale:.4g}"
        if r.ci is not None and r.ci.level > 0:
            med += f"\n{r.ci.low * scale:.4g}-{r.ci.high * scale:.4g}"
        ratio = "-" if r.ratio is None else f"{r.ratio:.3f}"
        if r.ratio_ci is not None and r.ratio_ci.level > 0:
            ratio += f"\n{r.ratio_ci.low:.3f}-{r.ratio_ci.high:.3f}"
        slower = f"{r.slower_rounds}/{r.rounds}" if r.rounds else "-"
        p = "-" if r.p_adjusted is None else f"{r.p_adjusted:.2g}"
        table.add_row(str(r.cpu), str(r.core), *([str(r.socket)] if sockets else []),
                      *([format_cpulist(list(r.siblings))] if smt else []), runs, med, ratio, slower, p,
                      *([_num(r.ipc, ".2f"), _num(r.ghz, ".2f")] if counted else []),
                      VERDICTS.get(r.verdict, r.verdict))
    console.print(table)
    console.print("runs: successful (+F failed); slower: rounds in which its ratio was above 1", highlight=False)
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
        mde = "" if result.mde is None else (
            f"; smallest slowdown this scan could have detected (80% power, Holm): {result.mde:.1%}"
            if result.mde != float("inf") else "; too few rounds to detect any slowdown after Holm's correction")
        console.print(f"round-to-round noise of a CPU's ratio: {result.noise:.1%} (robust SD){mde}", highlight=False)
    modes = result.modes
    if modes and modes.get("multimodal"):
        shares = ", ".join(f"{m['center'] * scale:.4g} ({m['share']:.0%} of runs)" for m in modes["modes"])
        console.print(f"run times have {len(modes['modes'])} modes [{unit}]: {shares} ({modes['method']}); "
                      f"{CAUSE}; the ratios above mix the modes", highlight=False)
        for r in result.cpus:
            if r.mode_shares:
                console.print(f"  CPU {r.cpu}: " + ", ".join(f"{s:.0%} of runs in mode {k + 1}"
                                                          for k, s in enumerate(r.mode_shares)), highlight=False)
    for x in result.disturbances:
        if x.intermittent:
            console.print(f"CPU {x.cpu} was slower than the rest in {_rounds(x.rounds)} only "
                          f"({x.ratio - 1:+.1%} there), not in nearly every round: interference that came and "
                          "went (another process, a co-tenant), not a slow core", highlight=False)
        else:
            console.print(f"CPU {x.cpu} was disturbed in {_rounds(x.rounds)} ({x.ratio - 1:+.1%} there), "
                          "left out of its test", highlight=False)
    for note in result.notes:
        console.print(f"note: {note}", highlight=False)
    for s in result.slow:
        console.print(
            f"verdict: [bold red]slow core[/] {s.core} (socket {s.socket}, node {s.node}, threads "
            f"{format_cpulist(list(s.siblings))}; slow {format_cpulist(list(s.cpus))}): "
            + escape(f"{s.ratio - 1:+.1%} [{s.ratio_ci.low - 1:+.1%}, {s.ratio_ci.high - 1:+.1%}] ({s.ratio_ci.label()})")
            + f" vs the rest, slower in {s.slower_rounds} of {s.rounds} rounds, p = {s.p_adjusted:.2g} (Wilcoxon, Holm)",
            highlight=False)
    if not result.slow:
        console.print(f"verdict: {escape(result.verdict)} (per-round ratios, Wilcoxon signed-rank + Holm)",
                      highlight=False)
