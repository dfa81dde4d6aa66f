"""Terminal rendering of a per-core scan: the per-CPU table, the evidence and the verdict (rich).
Every line is read off the one CoresResult; the verdict is its own ``verdict`` sentence."""

from __future__ import annotations

import math
from rich.markup import escape
from rich.table import Table

from perflab.platform.sysfs import format_cpulist
from perflab.stats.modes import CAUSE
from perflab.studies.cores.result import CoresResult, as_change, level_text, rounds_text

VERDICTS = {"slow": "[bold red]SLOW[/]", "unresolved": "[yellow]cannot tell[/]",
            "contention": "[yellow]contention[/]", "intermittent": "[yellow]intermittent[/]",
            "disturbed": "[yellow]disturbed[/]", "uneven": "uneven", "failed": "[red]failed[/]"}


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


def _blocks(levels, higher_is_better: bool) -> str:
    """A CPU's change against the rest in each block, in the metric's direction."""
    return " ".join("-" if v is None else f"{as_change(1 + v, higher_is_better):+.0%}" for v in levels)


def _timeline(result: CoresResult) -> list[str]:
    """The blocks with their times, how long slowness held, and whether the scan can tell."""
    tl = result.timeline
    if tl is None or not tl.blocks:
        return []
    where = ", ".join(tl.block_text([b.index]) for b in tl.blocks)
    lines = [f"time: {len(tl.blocks)} block{'s' if len(tl.blocks) > 1 else ''} over "
             + (f"{tl.span_s:.0f} s" if not math.isnan(tl.span_s) else "an unknown time") + f" ({where})"]
    held = []
    if tl.round_corr is not None:
        held.append(f"round-to-round correlation of a CPU's ratio {tl.round_corr:.2f} "
                    + (f"(slowness held about {tl.hold_s:.1f} s)" if tl.hold_s is not None
                       else "(slowness held less than a round)"))
    if tl.block_corr is not None:
        held.append(f"block-to-block rank correlation {tl.block_corr:.2f} over {tl.block_cpus} CPUs"
                    + (" (states held from block to block)" if tl.held else ""))
    if held:
        lines.append("how long slowness holds: " + "; ".join(held))
    lines.append("the scan tells a slow core from a state of the moment" if tl.tells
                 else f"the scan cannot tell a slow core from a state of the moment: {tl.why}")
    return lines


def render(result: CoresResult, console, workload_name: str = "") -> None:
    """Per-CPU table, the tests behind the verdict, disturbances, modes, notes and the verdict."""
    scale, unit = _scale(result)
    better = "higher" if result.higher_is_better else "lower"
    title = (f"perflab cores {workload_name} ({result.mode}): median {result.metric} per CPU [{unit}], "
             f"{better} is better; vs the rest: its {result.metric} against the median of the other CPUs "
             "in the same round")
    table = Table(title=escape(" ".join(title.split())), title_justify="left", padding=(0, 1))
    levels = sorted({f"{r.ci.level:.0%}" for r in result.cpus if r.ci is not None and r.ci.level > 0})
    seq = result.sequential
    # a repeated interval's level is 99.x %: rounded to a whole per cent it would read 100 %
    rlevels = sorted({level_text(r.change_ci.level) if seq is not None else f"{r.change_ci.level:.0%}"
                      for r in result.cpus if r.change_ci is not None})
    sockets = len({r.socket for r in result.cpus}) > 1
    smt = any(len(r.siblings) > 1 for r in result.cpus)
    counted = any(r.ipc is not None for r in result.cpus)
    tl = result.timeline
    by_block = tl is not None and len(tl.blocks) > 1
    cols = ["cpu", "core", *(["socket"] if sockets else []), *(["siblings"] if smt else []), "runs",
            f"median {unit}\n{'/'.join(levels) or 'no'} CI", f"vs the rest\n{'/'.join(rlevels) or 'no'} CI",
            *(["by block"] if by_block else []), "slower", "p Holm" if seq is None else "decided",
            *(["IPC", "GHz"] if counted else []),
            "verdict"]
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
        if seq is not None:  # the repeated interval decides, not the fixed scan's Holm p
            p = (seq["cpus"].get(str(r.cpu)) or {}).get("decision") or ("?" if str(r.cpu) in seq["cpus"] else "-")
        table.add_row(str(r.cpu), str(r.core), *([str(r.socket)] if sockets else []),
                      *([format_cpulist(list(r.siblings))] if smt else []), runs, med, change,
                      *([_blocks(r.block_levels, result.higher_is_better)] if by_block else []), slower, p,
                      *([_num(r.ipc, ".2f"), _num(r.ghz, ".2f")] if counted else []),
                      VERDICTS.get(r.verdict, r.verdict))
    console.print(table)
    console.print("runs: successful (+F failed); " + ("by block: vs the rest in each time block; " if by_block else "")
                  + "slower: rounds in which it was slower than the rest; verdict: SLOW only when significant, "
                  "slow in nearly every round and in every block, over more time than the machine's slowness "
                  "holds" + ("; uneven: slower over the scan, not in every block" if any(
                      r.verdict == "uneven" for r in result.cpus) else ""), highlight=False)
    console.print(f"{result.rounds} rounds ({result.mode}), stopped by {result.stopped}, {result.elapsed_s:.1f} s; "
                  f"{result.runs} runs, {result.failed} failed", highlight=False)
    if result.failures:
        console.print("failed runs (left out of every statistic): "
                      + ", ".join(f"{k}: {v}" for k, v in result.failures.items()), highlight=False)
    f = result.friedman
    if f and not math.isnan(f["p_value"]):
        console.print(f"any CPU different? Friedman chi2 = {f['statistic']:.3g} over {f['rounds']} complete rounds "
                      f"and {f['cpus']} CPUs, p = {f['p_value']:.2g}", highlight=False)
    if result.noise is not None:
        console.print(f"round-to-round noise of a CPU's ratio: {result.noise:.1%} (robust SD)", highlight=False)
    for line in _timeline(result):
        console.print(escape(line), highlight=False)
    if result.mde is not None and result.mde != float("inf"):
        how = f"{result.rounds} rounds" + (f" in {len(tl.blocks)} blocks" if tl is not None and by_block else "")
        console.print(f"smallest detectable slowdown: {result.mde:.1%} (called slow in >= 90% of scans simulated "
                      f"under this scan's own noise, {how}, Holm)", highlight=False)
    elif result.mde_why:
        console.print(f"smallest detectable slowdown: none, {escape(result.mde_why)}", highlight=False)
    modes = result.modes
    if modes and modes.get("multimodal"):
        # the modes are found on costs; shown as the metric's own values, like the medians
        shares = ", ".join(f"{(1 / m['center'] if result.higher_is_better else m['center']) * scale:.4g} "
                           f"({m['share']:.0%} of runs)" for m in modes["modes"])
        mixed = ("CPUs are compared within a speed (each run divided by its mode's factor)" if modes.get("normalised")
                 else "the ratios above mix the modes")
        console.print(f"run times have {len(modes['modes'])} modes [{unit}]: {shares} ({modes['method']}); "
                      f"{CAUSE}; {mixed}", highlight=False)
        for r in result.cpus:
            if r.mode_shares:
                console.print(f"  CPU {r.cpu}: " + ", ".join(f"{s:.0%} of runs in mode {k + 1}"
                                                          for k, s in enumerate(r.mode_shares)), highlight=False)
    if result.speeds:
        console.print(f"speeds: {escape(result.speeds)}", highlight=False)
    for x in result.disturbances:
        if not x.intermittent:  # an intermittent CPU is in the verdict itself
            console.print(f"CPU {x.cpu} was disturbed in {rounds_text(x.rounds)} ({result.metric} "
                          f"{as_change(x.ratio, result.higher_is_better):+.1%} there), left out of its test",
                          highlight=False)
    for note in result.notes:
        console.print(f"note: {escape(note)}", highlight=False)
    if seq is not None and seq.get("looks"):
        last = seq["looks"][-1]
        console.print(f"measured until decided: look {len(seq['looks'])} at {last['runs']} blocks of at most "
                      f"{seq['budget']}, each CPU's repeated interval at {level_text(last['level'])} "
                      f"({seq['alpha_each']:.2%} a CPU over all looks, Bonferroni)", highlight=False)
        console.print("decided: slow (its repeated interval above 1, the ratio at least 1 + --min-effect), ruled "
                      "out (the interval's top at most 1 + --min-effect), ? (undecided)", highlight=False)
        how = "per-block levels, repeated intervals, O'Brien-Fleming-type alpha spending"
    else:
        how = f"per-round ratios, {'block t-test' if by_block and result.block_margin else 'sign test'} + Holm"
    console.print(f"verdict: {escape(result.verdict)} ({how})", highlight=False)
