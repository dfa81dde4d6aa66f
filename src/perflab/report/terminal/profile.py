"""How `perflab profile` and `perflab profile diff` look in a terminal."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from perflab.report.terminal import profile_counts
from perflab.studies.profile.study import ProfileResult
from perflab.studies.profile.diff import ProfileDiffResult


def _window_line(row: dict[str, Any], k: int, n: int) -> str:
    head = f"recording {k + 1}/{n}"
    if not row.get("opened"):
        return f"{head}: window never opened"
    where = f" attached to pid {','.join(map(str, row['attached']))};" if row.get("attached") else ""
    opened = f" opened at {row['start_line']!r}" if row.get("start_line") else " opened at launch"
    lat = row.get("enable_latency_us")
    first = row.get("first_sample_us")
    figs = []
    if lat is not None:
        figs.append(f"marker -> acknowledged enable {lat:.0f} us")
    if first is not None:
        figs.append(f"first sample {first:.0f} us")
    return (f"{head}:{where}{opened}" + (f" ({', '.join(figs)})" if figs else "")
            + f"; closed by {row.get('closed_by')}; {row.get('window_ms', 0):.1f} ms, "
            f"{row.get('outside_window', 0)} samples outside the window")


def render(result: ProfileResult, console: Any) -> None:
    """The window of each recording, the top functions, annotations, and the verdict."""
    if result.instrument == "callgrind":
        return profile_counts.render(result, console)
    console.print(result.event_reason)
    for k, row in enumerate(result.recordings):
        console.print(escape(_window_line(row, k, len(result.recordings))))
    if not result.opened:
        console.print(f"perflab: {escape(result.message)}")
        return
    if not result.samples:
        console.print(escape(result.message))
        return
    what = "the whole run" if result.whole_run else "the window"
    t = Table(title=f"top functions of {what} ({result.event})")
    for col in ("share", "samples", "symbol", "shared object"):
        t.add_column(col, justify="right" if col in ("share", "samples") else "left")
    for r in result.top:
        t.add_row(f"{r.share:.2%}", str(r.samples), escape(r.symbol), escape(r.dso))
    console.print(t)
    for a in result.annotations:
        hot = sorted(a.instructions, key=lambda x: -x[2])[:3]
        hot_txt = escape("; ".join(f"{' '.join(i.split())} {s:.0%}" for _, i, s in hot)) or "no disassembly"
        flag = "  <- front-end hint" if a.front_end_hint else ""
        console.print(f"  {escape(a.symbol)}: {a.head_share:.0%} on its {a.head_desc}{flag}; hottest: {hot_txt}")
    if result.symbol_hint:
        console.print(f"note: {escape(result.symbol_hint)}")
    console.print(escape(result.message))


def render_diff(result: ProfileDiffResult, console: Any) -> None:
    """Seed 001's table: contributors to the extra period, in the event's own unit."""
    if result.instrument == "callgrind":
        return profile_counts.render_diff(result, console)
    if result.swapped:
        console.print(f"(A is the slower profile: showing what {escape(result.b_label)} spends beyond "
                      f"{escape(result.a_label)})")
    t = Table(title=f"major contributors to the extra {result.event} period of {escape(result.b_label)} "
                    f"over {escape(result.a_label)} (+{result.extra_fraction:.1%})")
    tests = {ft.symbol: ft for ft in result.tests}
    test_cols = ["share A", "share B", "Holm p"] if result.tested else []
    cols = ["share of extra", f"extra {result.unit}", "A samples", "B samples", *test_cols, "symbol",
            "shared object"]
    for c in cols:
        t.add_column(c, justify="left" if c in ("symbol", "shared object") else "right")
    for r in result.rows:
        cells = [f"{r.share_of_extra:.2%}", f"{r.extra:.1f}", f"{r.a_samples:.1f}", f"{r.b_samples:.1f}"]
        if test_cols:
            ft = tests.get(r.symbol)
            # A function under MIN_TESTED_SHARE of the period was not compared: blank, not "1".
            cells += ([f"{ft.share_a:.1%}", f"{ft.share_b:.1%}",
                       f"{ft.p_holm:.2g}" + (" *" if ft.differs else "")] if ft else ["", "", "not tested"])
        cells += [escape(r.symbol), escape(r.dso)]
        t.add_row(*cells)
    console.print(t)
    na, nb = result.n_recordings
    if result.speeds:
        console.print(f"samples are means per recording at the same mix of speeds ({na} and {nb} "
                      f"recordings; {escape(result.speeds['line'])})")
        for note in result.speeds.get("notes") or ():
            console.print(f"warning: {escape(note)}")
    elif na > 1 or nb > 1:
        console.print(f"samples are means per recording ({na} and {nb} recordings)")
    if result.tested:  # untested, the verdict itself says so in its one line
        console.print(escape(result.test_note) + (" (* differs)" if result.differing else ""))
    if abs(result.extra_fraction) < 0.05:
        console.print(f"warning: the profiles differ by only {result.extra_fraction:.1%}: shares of so "
                      "small an extra are dominated by sampling noise (record longer windows or --repeat)")
    console.print(escape(result.verdict))
