"""The front-end study in a terminal: ns per dispatch per size and page mode, the paired 4K/2M
ratios with their tests, knees beside the reference sizes, and the verdict with its evidence;
under --instrument cachegrind, simulated misses per dispatch and the cache model instead."""

from __future__ import annotations

from typing import Any

from perflab.studies.frontend.study import MODES, FrontendResult
from perflab.model.units import fmt_bytes


def _ci(ci: Any, fmt: str = "{:.1f}") -> str:
    return "-" if ci is None else f"[{fmt.format(ci.low)}, {fmt.format(ci.high)}] {ci.level:.0%}"


def render(result: FrontendResult, console: Any) -> None:
    """Print the result (rich tables and one-line notes)."""
    from rich.table import Table

    if result.instrument:
        return render_simulated(result, console)
    cpus = sorted({p.cpu for p in result.points}, key=lambda c: -1 if c is None else c)
    modes = [m for m in MODES if any(p.mode == m for p in result.points)]
    counted = any(p.itlb_per_dispatch is not None for p in result.points)
    for cpu in cpus:
        title = f"frontend ({result.kind}): ns per dispatch against hot code size"
        table = Table(title=title + ("" if cpu is None else f", CPU {cpu}"))
        for col in ["code size", "n", "perf span"]:
            table.add_column(col, justify="right")
        for m in modes:
            table.add_column(f"{m.upper()} pages ns [CI] level", justify="right")
            if counted:
                table.add_column(f"{m.upper()} iTLB / L1i misses per dispatch", justify="right")
        if len(modes) == 2:
            table.add_column("4K/2M [CI] level", justify="right")
            table.add_column("p (Holm)", justify="right")
        by = {(p.mode, p.bytes): p for p in result.points if p.cpu == cpu}
        rat = {r.bytes: r for r in result.ratios if r.cpu == cpu}
        for b in sorted({p.bytes for p in result.points if p.cpu == cpu}):
            p4 = by.get(("4k", b))
            first = p4 or by.get(("2m", b))
            assert first is not None  # b is the size of a point of one mode or the other
            row = [fmt_bytes(b), str(first.n), fmt_bytes(p4.span_bytes) if p4 and p4.span_bytes else "-"]
            for m in modes:
                p = by.get((m, b))
                if p is None or p.median_ns is None:
                    row.append(f"failed ({p.failed} runs)" if p else "-")
                else:
                    row.append(f"{p.median_ns:.2f} {_ci(p.ci, '{:.2f}')}"
                               + (f" ({p.failed} failed)" if p.failed else ""))
                if counted:
                    row.append("-" if p is None or p.itlb_per_dispatch is None else
                               f"{p.itlb_per_dispatch:.3g} / {p.l1i_per_dispatch or 0:.3g}")
            if len(modes) == 2:
                r = rat.get(b)
                row.append(f"{r.ratio:.3f} {_ci(r.ci, '{:.3f}')}" if r else "-")
                row.append("-" if r is None else f"{r.p_adjusted:.3g}" + (" *" if r.helps else ""))
            table.add_row(*row)
        console.print(table)

    def say(text: str) -> None:
        console.print(text, highlight=False)

    if len(modes) == 2:
        say("4K/2M > 1: 2 MiB pages faster; * = helps (Holm-corrected p < alpha and at least the "
            "minimum effect)")
    say(result.huge_reason or "2 MiB text pages: not requested")
    if result.counters_reason:
        say(f"counters: {result.counters_reason}")
    _tail(result, say)


def _tail(result: FrontendResult, say: Any) -> None:
    """Knees, references, failures, the verdict with its evidence, and the notes."""
    for k in result.knees:
        where = "" if k.cpu is None else f"CPU {k.cpu}, "
        if k.knee_bytes is None:
            say(f"knee ({where}{k.mode} pages): no knee in range")
        else:
            near = f"; near: {k.nearest}" if k.nearest else "; no reference size within 2x"
            say(f"knee ({where}{k.mode} pages): {fmt_bytes(k.knee_bytes)} (slope {k.slope_before:.2f} -> "
                f"{k.slope_after:.2f} {k.measure} per doubling, BIC gain {k.score:.1f}){near}")
    if result.references:
        say("references: " + ", ".join(f"{name} = {fmt_bytes(b)}" for name, b in result.references.items()))
    if result.failures:
        say("failed runs (left out): " + "; ".join(f"{n} x {why}" for why, n in result.failures.items())
            + f" of {result.runs}")
    if result.verdict:
        say(f"verdict: {result.verdict}")
    for line in result.evidence:
        say(f"  {line}")
    for note in result.notes:
        say(f"note: {note}")


def render_simulated(result: FrontendResult, console: Any) -> None:
    """--instrument cachegrind: simulated counts per dispatch against code size, the cache model
    and the expected knee (the simulated I1), then the shared tail."""
    from rich.table import Table

    table = Table(title=f"frontend ({result.kind}, {result.instrument}): simulated misses per dispatch "
                        "against hot code size")
    for col in ("code size", "n", "I1 misses / dispatch", "LL instr. misses / dispatch",
                "instructions / dispatch", "runs", "run-to-run spread"):
        table.add_column(col, justify="right")

    def num(x: float | None) -> str:
        return "-" if x is None else f"{x:.4g}"

    for p in sorted(result.points, key=lambda p: p.bytes):
        spread = "-" if p.count_spread is None else ("0" if p.count_spread == 0 else f"{100 * p.count_spread:.3f} %")
        table.add_row(fmt_bytes(p.bytes), str(p.n), num(p.i1_per_dispatch), num(p.ll_i_per_dispatch),
                      num(p.ir_per_dispatch), str(p.reps) + (f" ({p.failed} failed)" if p.failed else ""), spread)
    console.print(table)

    def say(text: str) -> None:
        console.print(text, highlight=False, markup=False)

    say(f"instrument: {result.instrument}, cache model {result.cache_model}"
        + (f" ({result.cache_model_source})" if result.cache_model_source else "")
        + "; environment " + " ".join(f"{k}={v}" for k, v in result.env) + " only")
    say(f"expected knee: the simulated I1, {fmt_bytes(result.expected_knee_bytes)}")
    _tail(result, say)
