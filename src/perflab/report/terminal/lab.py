"""`perflab lab` in a terminal: each study's result once, by its own renderer, then one table
of the studies (status, campaign, runs, time) and the lab's verdict."""

from __future__ import annotations

import importlib
from typing import Any, Callable

from perflab.studies.lab.study import LabResult, Outcome, verdict


def renderer(name: str) -> Callable[[Any, Any], None] | None:
    """report/terminal/NAME.py's render (None for a study without one)."""
    try:
        module = importlib.import_module(f"perflab.report.terminal.{name}")
    except ModuleNotFoundError:
        return None
    return getattr(module, "render", None)


def render_outcome(outcome: Outcome, console: Any) -> None:
    """One study's result, printed once as it arrives."""
    where = f"campaign {outcome.campaign}" if outcome.campaign is not None else "not stored"
    console.rule(f"[bold]{outcome.name}[/] ({where}, {outcome.seconds:.1f} s)")
    if outcome.note:
        console.print(f"{outcome.name}: {outcome.note}", highlight=False, markup=False)
    if outcome.status != "done":
        colour = "yellow" if outcome.status.startswith("skipped") else "red"
        console.print(f"[{colour}]{outcome.name}: {outcome.status}[/]", highlight=False)
        return
    if outcome.earlier:
        console.print(f"done by an earlier run of this lab ({outcome.runs} runs stored)", highlight=False)
    show = renderer(outcome.name)
    if outcome.result is not None and show is not None:
        show(outcome.result, console)


def render(result: LabResult, console: Any, children: bool = True) -> None:
    """Each study's result (unless a live display printed them as they came), then the studies
    at a glance and the verdict."""
    from rich.table import Table

    if children:
        for outcome in result.steps:
            render_outcome(outcome, console)

    table = Table(title=f"perflab lab: {result.workload}")
    table.add_column("study")
    table.add_column("status", overflow="fold")
    for col in ("campaign", "runs", "replayed", "time \\[s]"):
        table.add_column(col, justify="right", no_wrap=True)
    for s in result.steps:
        status = s.status if not s.earlier else "done (earlier)"
        table.add_row(s.name, f"{status} ({s.note})" if s.note else status,
                      str(s.campaign) if s.campaign is not None else "-", str(s.runs),
                      str(s.replayed), f"{s.seconds:.1f}")
    console.print(table)
    console.print(f"{verdict(result)} ({result.executed_runs} runs executed, "
                  f"{result.replayed_runs} read back from the store)", highlight=False)
