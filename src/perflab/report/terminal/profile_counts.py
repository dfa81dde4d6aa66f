"""How `perflab profile --instrument callgrind` and the diff of two such campaigns look."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from perflab.studies.profile.study import ProfileResult
from perflab.studies.profile.diff import ProfileDiffResult


def _window_line(row: dict[str, Any], k: int, n: int) -> str:
    head = f"recording {k + 1}/{n}"
    if not row.get("opened"):
        return f"{head}: window never opened"
    if not row.get("start_line"):
        return f"{head}: whole run counted"
    lat = row.get("enable_latency_us")
    off = row.get("disable_latency_us")
    figs = [f"start marker -> dump {lat / 1e3:.1f} ms" if lat is not None else "",
            f"stop marker -> dump {off / 1e3:.1f} ms" if off is not None else ""]
    return (f"{head}: opened at {row['start_line']!r}, closed by {row.get('closed_by')}"
            + (f" ({', '.join(f for f in figs if f)})" if any(figs) else ""))


def render(result: ProfileResult, console: Any) -> None:
    """Each recording's window, the functions by exclusive Ir (with inclusive), the verdict."""
    console.print(escape(result.event_reason + (f"; cache model {result.cache_model}" if result.cache_model else "")))
    for k, row in enumerate(result.recordings):
        console.print(escape(_window_line(row, k, len(result.recordings))))
    if not result.opened:
        console.print(f"perflab: {escape(result.message)}")
        return
    events = result.count_events
    what = "the whole run" if result.whole_run else "the window"
    t = Table(title=f"top functions of {what} by exclusive instructions (callgrind, mean per recording)")
    cols = ["share", "Ir self", "Ir incl", *[f"{e} self" for e in events[1:]], "spread", "symbol", "object"]
    for c in cols:
        t.add_column(c, justify="left" if c in ("symbol", "object") else "right",
                     overflow="fold")
    for r in result.count_top:
        t.add_row(f"{r.share:.2%}", f"{r.self_[0]:,.0f}", f"{r.incl[0]:,.0f}",
                  *[f"{v:,.0f}" for v in r.self_[1:]], f"{r.spread:.2%}" if r.spread else "0",
                  escape(r.symbol), escape(r.obj.rsplit("/", 1)[-1]))
    console.print(t)
    if len(events) > 1:
        console.print(escape("totals per recording: " + ", ".join(
            f"{e} {v:,.0f}" for e, v in zip(events, result.count_totals))))
    console.print(escape(result.message))


def _ratio_cell(r: Any) -> str:
    """B/A with its interval (at the level in the column's title), 'exact', or why the row was
    not tested."""
    if r.status != "tested" or r.ratio is None:
        return {"below": "below share", "partial": "not in all"}.get(r.status, r.status)
    if r.exact:
        return f"{r.ratio:.4f} exact"
    return f"{r.ratio:.4f} [{r.low:.4f}, {r.high:.4f}]"


def render_diff(result: ProfileDiffResult, console: Any) -> None:
    """Functions by the change of their exclusive Ir between two callgrind campaigns, each
    tested function's B/A with its interval and Holm p (* changed), the test, the verdict."""
    t = Table(title=f"functions by change of exclusive instructions, {escape(result.b_label)} against "
                    f"{escape(result.a_label)} (callgrind, mean per recording)")
    # Every interval of a diff is at 1 - alpha (counted_test); an exact row says 'exact'.
    ratio = f"B/A [{1 - result.alpha:.0%} CI]"
    for c in ("change Ir", "change", "A Ir self", ratio, "Holm p", "symbol"):
        t.add_column(c, justify="left" if c == "symbol" else "right", overflow="fold")
    for r in result.count_rows:
        pct = f"{r.change_pct:+.1%}" if r.change_pct is not None else "new"
        holm_p = "" if r.p_holm is None else f"{r.p_holm:.2g}" + (" *" if r.changed else "")
        t.add_row(f"{r.change:+,.0f}", pct, f"{r.a:,.0f}", _ratio_cell(r), holm_p, escape(r.symbol))
    console.print(t)
    console.print(escape(result.test_note + (" (* changed)" if result.tested else "")))
    console.print(escape(result.verdict))
