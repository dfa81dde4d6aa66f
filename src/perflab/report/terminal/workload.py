"""How `perflab workload list` looks in a terminal: one row per workload --workload accepts."""

from __future__ import annotations

from typing import Any


def workloads_table(workloads: list) -> Any:
    """Name, where it is defined, its command and description, without borders."""
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for col in ("name", "source", "command", "description"):
        table.add_column(col)
    for w in workloads:
        table.add_row(w.name, w.source, w.command, w.description)
    return table
