"""What a simulated instrument's runs say about themselves: the cache model they assumed, the
run-to-run spread of each measure, and what simulation cost.

Determinism is measured, not assumed: per command and measure, the spread is (max - min) /
median over the successful runs. Zero means every run counted the same; anything else names
the measure as not deterministic (threads, timers, randomness, printed timings), and compare and
the gate treat it like a time.
"""

from __future__ import annotations

import statistics
from typing import Any, Iterable

from perflab.measure.cachegrind import MEASURES, NAME, PER_EVENT, STABLE_ENV, CachegrindExecutor
from perflab.measure.interface import Executor

SHOWN = MEASURES + tuple(f"{m}_per_event" for m in PER_EVENT)
# What the instrument's own section of a run shows; the generic metrics table leaves these out.
IN_SECTION = frozenset(SHOWN) | {"processes"}


def spread(name: str, values: list[float]) -> dict[str, Any]:
    """n, median, min, max and (max - min) / median of one measure's runs."""
    med = statistics.median(values)
    lo, hi = min(values), max(values)
    return {"measure": name, "n": len(values), "median": med, "min": lo, "max": hi,
            "spread": (hi - lo) / med if med else 0.0}


def summarise(instrument: str, cache_model: str, benchmarks: Iterable[Any]) -> dict[str, Any]:
    """The instrument section of a run's result (each benchmark's spread per measure)."""
    if instrument != NAME:
        return {}
    rows = []
    for b in benchmarks:
        for name in SHOWN:
            vals = [v for v in b.metrics.get(name, ()) if v is not None]
            if vals:
                rows.append({"command": b.command, **spread(name, vals)})
    varying = [m for m in SHOWN if any(r["measure"] == m and r["spread"] > 0 for r in rows)]
    return {"tool": NAME, "cache_model": cache_model, "env": dict(STABLE_ENV), "spread": rows,
            "deterministic": bool(rows) and not varying, "varying": varying}


def with_executor(section: dict[str, Any], executor: Executor) -> dict[str, Any]:
    """The section with where its cache model came from and each command's measured slowdown
    (native against simulated), as the instrument's executor recorded them."""
    if not section:
        return section
    if not isinstance(executor, CachegrindExecutor):
        return section  # resumed under a plain executor: nothing simulated, nothing to add
    model, costs = executor.model, executor.costs
    section = {**section, "cache_model_source": model.source, "cache_model_notes": list(model.notes)}
    if costs:
        section = {**section, "cost": {label: c.as_dict() for label, c in costs.items()}}
    return section
