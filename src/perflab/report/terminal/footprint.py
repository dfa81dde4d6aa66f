"""How a footprint looks in a terminal: files used, failed look-ups, sizes, tracing overhead."""

from __future__ import annotations

from typing import Any

from perflab.platform.sysfs import format_size
from perflab.stats import median
from perflab.studies.footprint.study import MIN_CI_RUNS as FOOTPRINT_MIN_CI_RUNS
from perflab.studies.footprint.study import FootprintResult


def render(result: FootprintResult, console: Any, show_all: bool = False, limit: int = 40) -> None:
    """Files used, failed look-ups, size by top directory, tracing overhead."""
    from rich.table import Table

    files = [f for f in result.files if show_all or f.kind in ("file", "gone")]
    t = Table(title=f"files used by {result.workload} ({len(result.files)} paths, {result.syscalls} calls traced)")
    for col in ("path", "uses", "kind", "size", "resolves to"):
        t.add_column(col, justify="right" if col == "size" else "left")
    for f in files[:limit]:
        t.add_row(f.path, ",".join(f.uses), f.kind + (" (written)" if f.written else ""),
                  format_size(f.size) if f.kind == "file" else "",
                  f.real_path if f.real_path != f.path else "")
    if len(files) > limit:
        t.add_row(f"... {len(files) - limit} more (--all, --json)", "", "", "", "")
    console.print(t)
    if result.failed:
        ft = Table(title=f"failed look-ups ({len(result.failed)})")
        for col in ("path", "uses", "errno"):
            ft.add_column(col)
        for miss in result.failed[:limit]:
            ft.add_row(miss.path, ",".join(miss.uses), miss.errno)
        if len(result.failed) > limit:
            ft.add_row(f"... {len(result.failed) - limit} more", "", "")
        console.print(ft)
    tt = Table(title="needed files by top directory")
    for col in ("directory", "files", "size"):
        tt.add_column(col, justify="left" if col == "directory" else "right")
    sizes = sizes_that_add_up([d.bytes for d in result.by_top], result.total_bytes)
    for d, size in zip(result.by_top, sizes[:-1]):
        tt.add_row(d.top, str(d.files), size)
    tt.add_row("total", str(result.total_files), sizes[-1])
    console.print(tt)
    if result.overhead is not None:
        if result.overhead_ci is not None:
            lo, hi = result.overhead_ci
            interval = f"{result.overhead_ci_level:.0%} CI {lo:.2f}-{hi:.2f}"
        else:
            interval = f"no CI: {FOOTPRINT_MIN_CI_RUNS} runs each needed, --reps {FOOTPRINT_MIN_CI_RUNS}"
        console.print(
            f"tracing overhead: {result.overhead:.2f}x wall time ({interval}; median "
            f"{median(result.traced_wall_s) * 1e3:.1f} ms traced vs {median(result.untraced_wall_s) * 1e3:.1f} ms, "
            f"{len(result.traced_wall_s)} runs each, pinned to CPU {result.cpu}"
            f"{', seccomp-bpf' if result.seccomp else ''})"
        )
    console.print(f"campaign {result.campaign_id}")


def sizes_that_add_up(parts: list[int], total: int) -> list[str]:
    """The parts and the total in the total's unit, 0.1 apart, rounded by largest remainder
    (Hamilton's method) so that the printed parts add up to the printed total."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10), ("B", 1)):
        if total >= scale or unit == "B":
            break
    step = scale / 10 if unit != "B" else 1
    exact = [p / step for p in parts]
    shown = [int(x) for x in exact]
    target = round(total / step)
    by_remainder = sorted(range(len(parts)), key=lambda i: exact[i] - shown[i], reverse=True)
    for i in by_remainder[:max(0, target - sum(shown))]:
        shown[i] += 1
    digits = 0 if unit == "B" else 1
    return [f"{n * step / scale:.{digits}f} {unit}" for n in [*shown, sum(shown)]]
