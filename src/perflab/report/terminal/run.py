"""`perflab run` in a terminal: hyperfine's table with the median's CI and its level, metrics,
perf stat counters, the ratios to the reference and the warnings, each printed once."""

from __future__ import annotations

import math
from typing import Any

from perflab.report.terminal.energy import render_energy
from perflab.studies.instrument import IN_SECTION as INSTRUMENT_SHOWN
from perflab.report.terminal.instrument import render as render_instrument
from perflab.report.terminal.series import render as render_series
from perflab.stats.interval import CI
from perflab.studies.run.result import (Benchmark, RunStudyResult, level_text, ranked_by, sequential_line,
                                        too_few_runs)
from perflab.studies.run.series import SERIES_METRICS, SeriesSummary


def time_unit(seconds: float) -> str:
    return "s" if seconds >= 1 else "ms" if seconds >= 1e-3 else "µs"


def fmt_time(seconds: float, unit: str | None = None) -> str:
    unit = unit or time_unit(seconds)
    scale = {"s": 1.0, "ms": 1e3, "µs": 1e6}[unit]
    return f"{seconds * scale:.2f} {unit}" if unit != "s" else f"{seconds:.3f} s"


def _num(v: float) -> str:
    """Counts and checksums in full with thousands separators, other values to 6 digits."""
    if math.isfinite(v) and abs(v) >= 1e5 and float(v).is_integer():
        return f"{v:,.0f}"
    return f"{v:.6g}"


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def _relative(b: Benchmark) -> str:
    if not b.relative:
        return ""
    r = b.relative
    if r["ratio"] == 1.0 and r["low"] == r["high"] == 1.0:
        return "1.00"
    return f"{r['ratio']:.2f} [{r['low']:.2f}, {r['high']:.2f}]"


def _user_sys(user: float, system: float) -> str:
    """'1.2/0.4 ms': both in one unit of their own (the median's unit would print 0.0 for a
    command whose CPU time is a sliver of its wall time), named once."""
    u = time_unit(max(user, system)) if max(user, system) == max(user, system) and max(user, system) > 0 else "ms"
    return f"{fmt_time(user, u).split()[0]}/{fmt_time(system, u)}"


def render(result: RunStudyResult, console: Any) -> None:
    """The table (a block per command on a narrow terminal), metrics, counters, verdict, warnings."""
    from rich.table import Table

    shown = [b for b in result.benchmarks if b.summary]
    # One run gives no interval (its "CI" has level 0): such a cell says so instead.
    levels = {CI.from_dict(b.median_ci).label() for b in shown if b.median_ci and b.median_ci["level"] > 0}
    ci_head = levels.pop() if len(levels) == 1 else "CI" if levels else None
    many = len(shown) > 1
    narrow = console.is_terminal and console.width < 110
    table = Table(title="perflab run")
    table.add_column("command", overflow="fold")
    for col in ("runs", f"median [{ci_head}]" if ci_head else "median", "mean ± σ", "min…max", "user/sys",
                "max RSS"):
        table.add_column(col, justify="right", no_wrap=True)
    if many:
        rel_levels = {b.relative["level"] for b in shown if b.relative and b.relative.get("ratio") != 1.0}
        rel_head = (f"{min(rel_levels):.1%} CI" if not _commands_looked(result) else f"{level_text(min(rel_levels))} repeated CI") \
            if rel_levels else "CI"
        what = "" if result.measure == "wall time" else f" {result.measure}"  # the ranked measure's ratio
        table.add_column(f"relative{what} [{rel_head}]", justify="right", no_wrap=True)
    for b in shown:
        s, ci = b.summary, CI.from_dict(b.median_ci)  # type: ignore[arg-type]  # median_ci is set with the summary (asserted next)
        assert s is not None
        u = time_unit(s["median"])
        num = lambda x: fmt_time(x, u).split()[0]  # noqa: E731 - closes over this row's unit
        if ci.level <= 0:
            median = f"{fmt_time(s['median'], u)} (1 run: no CI)"
        else:
            median = f"{fmt_time(s['median'], u)} [{num(ci.low)}, {num(ci.high)}]"
            if len(levels) > 1 or ci_head == "CI":
                median += f" ({ci.label()})"
        cells = [str(s["n"]) + (f" (+{b.failed} failed)" if b.failed else ""), median,
                 f"{fmt_time(s['mean'], u)} ± {num(s['stddev'])}", f"{num(s['min'])}…{num(s['max'])}",
                 _user_sys(_mean(b.user), _mean(b.system)),
                 f"{max(b.maxrss_kb) / 1024:.1f} MiB"]
        if narrow:
            # hyperfine-like block per command: a table does not fit a narrow terminal
            console.print(f"[bold]{b.command}[/bold]", highlight=False)
            console.print(f"  median {cells[1]}   mean {cells[2]}   range {cells[3]}\n"
                          f"  user/sys {cells[4]}   max RSS {cells[5]}   {cells[0]} runs"
                          + (f"   relative {_relative(b)}" if many else ""), highlight=False)
            continue
        table.add_row(b.command, *cells, *([_relative(b)] if many else []))
    if shown and not narrow:
        console.print(table)
    _extra_tables(result, console)
    render_series([(b.command, SeriesSummary.from_dict(b.series)) for b in shown if b.series], console,
                  result.workload)
    render_instrument(result.instrument, console)
    render_energy([(b.command, b.energy) for b in shown], console)
    ref = result.reference
    if ref is not None and many:
        others = [b for b in shown if b is not ref and b.relative]
        best = result.fastest
        console.print(f"{ranked_by(result)}; reference: [bold]{ref.command}[/bold]"
                      + (f"; best median: {best.command} (a point estimate)" if best else ""),
                      highlight=False)
        for b in others:
            r = b.relative
            assert r is not None  # `others` keeps only those with one
            if r.get("verdict"):
                what = r["verdict"]
            elif r.get("decision") == "within":
                what = f"no change of {100 * r['min_effect']:g} % or more (the interval lies inside ±{100 * r['min_effect']:g} %)"
            elif _commands_looked(result):
                what = ("cannot tell within the budget (see below)" if (result.sequential or {}).get("final")
                        else "not decided yet")
            elif too_few_runs(r):
                what = "too few runs to tell (see the warning)"
            elif r.get("undecided"):
                what = "cannot be told from a change of speed (see the warning)"
            else:
                what = (f"not shown to differ (the interval holds 1, or under {100 * r.get('min_effect', 0.01):g} %; "
                        "--until-decided runs until it tells)")
            kind = "repeated CI" if _commands_looked(result) else "CI"
            console.print(f"  {r['ratio']:.3g}x [{r['low']:.3g}, {r['high']:.3g}] ({level_text(r['level'])} {kind}, "
                          f"Bonferroni over {len(others)}) {what}: {b.command}",
                          highlight=False, markup=False)
        if _commands_looked(result):
            console.print(sequential_line(result), highlight=False, markup=False)
    if result.sequential and result.sequential.get("gate"):  # the gate's own lines follow
        console.print(sequential_line(result), highlight=False, markup=False)
    h = result.health
    if h:
        parts = [f"{h['suspect']} of {h['runs']} runs suspect"]
        if "cpu_pressure_median" in h:
            parts.append(f"CPU pressure median {100 * h['cpu_pressure_median']:.0f} % "
                         f"(max {100 * h['cpu_pressure_max']:.0f} %)")
        if h.get("steal_max"):
            parts.append(f"steal max {100 * h['steal_max']:.1f} %")
        if h.get("throttle_events"):
            parts.append(f"{h['throttle_events']} thermal throttle events")
        parts.append(f"governor {h.get('governor', 'not reported')}, turbo {h.get('turbo', 'not reported')}")
        console.print("health: " + "; ".join(parts), highlight=False, markup=False)
    for w in result.warnings:
        console.print(f"[yellow]warning:[/yellow] {w}", highlight=False)


def _extra_tables(result: RunStudyResult, console: Any) -> None:
    """Metrics and perf stat counters, a table of each: a workload may report many."""
    from rich.table import Table

    for title, attr in (("metrics (median per run)", "metric_medians"),
                        ("perf stat (median per run)", "counter_medians")):
        meds = {b.command: getattr(b, attr)() for b in result.benchmarks}
        # An instrument's measures have their own table (report/terminal/instrument.py).
        skip = INSTRUMENT_SHOWN if attr == "metric_medians" and result.instrument else ()
        if attr == "metric_medians":  # the series section shows these with their intervals
            skip = (*skip, *SERIES_METRICS)
        names = sorted({k for m in meds.values() for k in m if k not in skip})
        if not names:
            continue
        t = Table(title=title)
        t.add_column("command", overflow="fold")
        for name in names:
            t.add_column(name, justify="right", no_wrap=True)
        for command, m in meds.items():
            t.add_row(command, *(_num(m[n]) if n in m else "-" for n in names))
        console.print(t)


def _commands_looked(result: RunStudyResult) -> bool:
    """Whether the looks decided the commands' comparisons (--until-decided without --baseline;
    with one, they decided the gate's and the commands' are made as without looks)."""
    return bool(result.sequential) and not (result.sequential or {}).get("gate")
