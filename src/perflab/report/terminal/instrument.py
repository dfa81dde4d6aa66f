"""A simulated instrument's section of `perflab run` in a terminal: the cache model, each
measure's median and run-to-run spread per command, and what simulation cost."""

from __future__ import annotations

from typing import Any



RUN_ADVICE = "keep the input short for a long campaign (e.g. -- --events 20)"


def cost_line(label: str, cost: Any, advice: str = RUN_ADVICE) -> str:
    """One line, printed before the campaign goes on: the measured slowdown and the advice."""
    return (f"cachegrind: '{label}' runs {cost.slowdown:.0f}x slower simulated "
            f"({cost.native_s * 1e3:.1f} ms native, {cost.simulated_s * 1e3:.0f} ms simulated); {advice}")


def _count(x: float) -> str:
    """Counts in full with separators; small per-event shares to 4 digits."""
    return f"{x:,.0f}" if abs(x) >= 1000 or float(x).is_integer() else f"{x:.4g}"


def _spread(row: dict) -> str:
    if row["spread"] == 0:
        return f"0 (all {row['n']} runs equal)"
    return f"{100 * row['spread']:.3g} % ({_count(row['min'])}…{_count(row['max'])})"


def render(section: dict, console: Any) -> None:
    """The cache model, a table of measures with their spread, and the determinism verdict."""
    if not section:
        return
    from rich.table import Table

    env = " ".join(f"{k}={v}" for k, v in section.get("env", {}).items())
    console.print(f"instrument: {section['tool']}, cache model {section['cache_model']}"
                  + (f" ({section['cache_model_source']})" if section.get("cache_model_source") else "")
                  + f"; environment {env} only", highlight=False, markup=False)
    for note in section.get("cache_model_notes", ()):
        console.print(f"  {note}", highlight=False, markup=False)
    table = Table(title=f"{section['tool']} (simulated, per run)")
    for col, justify in (("command", "left"), ("measure", "left"), ("median", "right"),
                         ("run-to-run spread", "right")):
        table.add_column(col, justify=justify, overflow="fold")  # type: ignore[arg-type]  # rich wants a Literal; the tuple holds its words
    for row in section.get("spread", ()):
        table.add_row(row["command"], row["measure"], _count(row["median"]), _spread(row))
    console.print(table)
    if section.get("deterministic"):
        console.print("deterministic: every measure counted the same in every run",
                      highlight=False, markup=False)
    elif section.get("varying"):
        console.print(f"not deterministic: {', '.join(section['varying'])} varied between runs "
                      "(threads, timers, randomness?); compare and the gate treat them like "
                      "times and need as many runs", highlight=False, markup=False)
    for label, c in section.get("cost", {}).items():
        console.print(f"cost: '{label}' {c['slowdown']:.0f}x slower simulated than native",
                      highlight=False, markup=False)

