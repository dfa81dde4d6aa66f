"""How `perflab results` looks in a terminal: the store's campaigns, and one campaign's runs (one
row per configuration, or every run)."""

from __future__ import annotations

from typing import Any

from perflab.report.listing import shown_status


def fmt_s(x: float | None) -> str:
    if x is None:
        return "-"
    if x >= 1:
        return f"{x:.3f} s"
    if x >= 1e-3:
        return f"{x * 1e3:.2f} ms"
    return f"{x * 1e6:.1f} us"


def fmt_num(x: float) -> str:
    return f"{x:.6g}"


def params_text(params: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(params.items())) or "-"


def short(text: str | None, width: int = 100) -> str:
    """A verdict's first clause (up to its first '; '), cut at a word where still longer than
    ``width``, marked [more]: never mid-number, and 'perflab results ID' shows it whole."""
    text = " ".join(str(text or "").split())
    first = text.split("; ", 1)[0]
    if len(first) > width:
        first = first[:width].rsplit(" ", 1)[0]
    return first if first == text else first + " [more]"


def campaigns_table(rows: list[dict], title: str) -> Any:
    """One row per campaign (report.listing.campaign_row), its verdict's first clause."""
    from rich.table import Table

    table = Table(title=title)
    for col in ("id", "study", "status", "runs", "started", "duration", "parent", "verdict"):
        table.add_column(col, justify="right" if col in ("id", "runs", "duration", "parent") else "left")
    for r in rows:
        table.add_row(
            str(r["id"]), r["study"] + (f" ({r['name']})" if r["name"] else ""), shown_status(r),
            str(r["measurements"]), r["started"].replace("T", " ")[:16],
            fmt_s(r["duration_s"]), str(r["parent_id"] or ""), short(r["verdict"]),
        )
    return table


def runs_table(measurements: list) -> Any:
    """Every run of a campaign: label, params, round, wall time, exit, metrics."""
    from rich.table import Table

    table = Table()
    for col in ("run", "label", "params", "rep", "wall", "exit", "metrics"):
        table.add_column(col)
    for m in measurements:
        r = m.result
        exit_ = str(r.exit_code) if r.exit_code is not None else f"signal {r.signal}"
        if r.timed_out:
            exit_ += " (timeout)"
        table.add_row(str(m.id), m.label, params_text(m.params), str(m.rep),
                      fmt_s(r.wall_s), exit_,
                      ", ".join(f"{k}={fmt_num(v)}" for k, v in sorted(r.metrics.items())))
    return table


def groups_table(groups: list) -> Any:
    """One row per configuration (report.listing.group_measurements): runs, wall time, RSS, metrics."""
    from rich.table import Table

    table = Table()
    for col in ("label", "params", "runs", "failed", "median wall", "min", "max",
                "max RSS", "metrics (median)"):
        table.add_column(col, justify="left" if col in ("label", "params", "metrics (median)") else "right")
    for g in groups:
        table.add_row(
            g.label, params_text(g.params), str(g.n), str(g.failed),
            fmt_s(g.wall_median_s), fmt_s(g.wall_min_s), fmt_s(g.wall_max_s),
            f"{g.maxrss_median_kb / 1024:.1f} MiB" if g.maxrss_median_kb is not None else "-",
            ", ".join(f"{k}={fmt_num(v)}" for k, v in g.metrics.items()),
        )
    return table
