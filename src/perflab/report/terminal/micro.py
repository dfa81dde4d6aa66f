"""The micro study in a terminal: ns per operation per ABI with CIs and their levels, each ABI
against -m64, file output methods, malloc below and above the mmap threshold, seed 000's
threshold per ABI beside its formula, and the shm run."""

from __future__ import annotations

from typing import Any

from perflab.studies.micro.study import IO_BENCHES, MicroResult


def _ns(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:.3g} ms"
    if x >= 1e3:
        return f"{x / 1e3:.3g} µs"
    return f"{x:.3g} ns"


def _bytes(b: float) -> str:
    return f"{b / 2**20:.3g} MiB" if b >= 2**20 else f"{b / 1024:.3g} KiB"


def render(result: MicroResult, console: Any) -> None:
    """Print the result (rich tables and one-line notes)."""
    from rich.table import Table

    def say(text: str) -> None:
        console.print(text, highlight=False)

    levels = sorted({f"{c.ci.level:.0%}" for c in result.cells if c.ci is not None})
    table = Table(title=f"perflab micro: time per operation, median [CI] (levels {', '.join(levels)})")
    table.add_column("operation")
    for abi in result.abis:
        table.add_column(f"-{abi}", justify="right")
    base = "m64" if "m64" in result.abis else result.abis[0]
    others = [a for a in result.abis if a != base]
    for abi in others:
        table.add_column(f"-{abi} vs -{base} [CI]", justify="right")
    cells = {(c.bench, c.abi): c for c in result.cells}
    diffs = {(d.bench, d.abi): d for d in result.diffs}
    for bench in dict.fromkeys(c.bench for c in result.cells):
        row = [bench]
        for abi in result.abis:
            c = cells.get((bench, abi))
            if c is None or c.median_ns is None:
                row.append("-" if c is None else f"failed ({c.failed} runs)")
                continue
            assert c.ci is not None  # a median comes with its interval
            text = f"{_ns(c.median_ns)} [{_ns(c.ci.low)}, {_ns(c.ci.high)}]"
            if c.cycles_per_op is not None:
                text += f" {c.cycles_per_op:.1f} cyc"
            row.append(text + (f" ({c.failed} failed)" if c.failed else ""))
        for abi in others:
            d = diffs.get((bench, abi))
            row.append("-" if d is None else f"{d.pct:+.1f}% [{d.ci_pct.low:+.1f}, {d.ci_pct.high:+.1f}] "
                       f"{d.ci_pct.level:.0%}{' *' if d.significant else ''}")
        table.add_row(*row)
    console.print(table)
    if others:
        say(f"+N% = slower than -{base} (median of per-round ratios); * = significant (Mann-Whitney, "
            "Holm-corrected p < 0.05, CI excludes 0)")
    io = [c for c in result.cells if c.bench in IO_BENCHES and c.ops_per_s]
    if io:
        t = Table(title="file output, one byte per operation (operations per second)")
        t.add_column("method")
        for abi in result.abis:
            t.add_column(f"-{abi} ops/s", justify="right")
        for bench in [b for b in IO_BENCHES if any(c.bench == b for c in io)]:
            t.add_row(bench, *[f"{cells[(bench, a)].ops_per_s:,.0f}" if cells.get((bench, a)) and
                               cells[(bench, a)].ops_per_s else "-" for a in result.abis])
        console.print(t)
    mal = [c for c in result.cells if c.bench.startswith("malloc") and c.median_ns is not None]
    if mal:
        t = Table(title="malloc+touch+free with the mmap threshold fixed at 128 KiB (mallopt)")
        for col in ("operation", "ABI", "time", "page faults/op", "mmap'd blocks (of 16 held)", "brk growth"):
            t.add_column(col, justify="right" if col not in ("operation", "ABI") else "left")
        for c in mal:
            assert c.median_ns is not None  # `mal` keeps only the measured
            t.add_row(c.bench, c.abi, _ns(c.median_ns), f"{c.extra.get('minflt_per_op', 0):.2f}",
                      f"{c.extra.get('mmap_blocks', 0):.0f}", _bytes(c.extra.get("brk_growth_bytes", 0)))
        console.print(t)
    if result.thresholds:
        t = Table(title="malloc's mmap threshold per ABI, measured with mallinfo2 as the size grows")
        for col in ("ABI", "sizeof(long)", "initial", "dynamic maximum", "4*1024*1024*sizeof(long)"):
            t.add_column(col, justify="right" if col != "ABI" else "left")
        for abi, th in result.thresholds.items():
            t.add_row(abi, str(th["sizeof_long"]), f"{_bytes(th['initial_low'])} .. {_bytes(th['initial_high'])}",
                      f"{_bytes(th['dynamic_max_low'])} .. {_bytes(th['dynamic_max_high'])}", _bytes(th["formula"]))
        console.print(t)
        say("dynamic maximum: freeing an mmapped block raises the threshold to its size up to this "
            "bound; ranges are the last size served by brk and the first served by mmap")
    for c in result.cells:
        if c.bench == "shm" and c.median_ns is not None:
            say(f"shm ({c.abi}): {c.extra.get('shm_total_bytes', 0) / 2**30:.2f} GiB touched through "
                f"segments attached in turn, {_ns(c.median_ns)} per 4 KiB page")
    if result.failures:
        say("failed runs (left out): " + "; ".join(f"{n} x {why}" for why, n in result.failures.items())
            + f" of {result.runs}")
    for what, why in result.skipped.items():
        say(f"skipped {what}: {why}")
    for note in result.notes:
        say(f"note: {note}")
