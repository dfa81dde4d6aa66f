"""Energy in a terminal: one line per benchmark or variant, joules per run and per event with
their intervals (studies.energy.EnergySummary.as_dict), printed only where energy was measured."""

from __future__ import annotations

from typing import Any, Sequence

from perflab.stats.interval import CI


def _ci(median: float, ci: dict, unit: str) -> str:
    c = CI.from_dict(ci)
    return f"{median:.4g} {unit} [{c.low:.4g}, {c.high:.4g}] ({c.label()})"


def energy_line(name: str, e: dict) -> str:
    """'NAME: 12.3 J/run [12.1, 12.6] (94% CI), 0.123 J/event [...] (94% CI), 61.5 W, 5 runs'."""
    parts = [_ci(e["joules_per_run"], e["joules_per_run_ci"], "J/run")]
    if e.get("joules_per_event") is not None:
        parts.append(_ci(e["joules_per_event"], e["joules_per_event_ci"], "J/event"))
    parts.append(f"{e['watts']:.4g} W")
    parts.append(f"{e['n']} runs")
    return f"  {name}: " + ", ".join(parts)


def render_energy(rows: Sequence[tuple[str, dict | None]], console: Any) -> None:
    """A heading naming the source, then one line per measured row; nothing when none was."""
    measured = [(name, e) for name, e in rows if e]
    if not measured:
        return
    sources = sorted({e.get("source") or "unknown source" for _, e in measured})
    console.print(f"energy per run and per event, medians ({'; '.join(sources)}):",
                  highlight=False, markup=False)
    for name, e in measured:
        console.print(energy_line(name, e), highlight=False, markup=False, soft_wrap=True)
