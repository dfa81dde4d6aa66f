"""How a cost result looks in a terminal: the platforms' table, the best one and why, and what
the power marks mean."""

from __future__ import annotations

from typing import Any

from perflab.studies.cost.study import CostResult


def render(result: CostResult, console: Any) -> None:
    """The table of platforms (* the best), the choice and its reason, the power marks' meaning."""
    from rich.table import Table

    req = result.requirement
    cur = req.currency
    t = Table(title=f"{req.target_events_per_s:,.0f} {req.unit} inside {req.power_envelope_kw:g} kW"
                    + (f", budget {req.budget:,.0f} {cur}" if req.budget is not None else ""))
    per = "event/s" if req.unit == "events/s" else req.unit
    for col in ("platform", f"{req.unit}/node", "nodes", f"node {cur}", f"total {cur}", "node W", "total kW",
                "fits", f"{cur} per {per}", f"W per {per}"):
        t.add_column(col, justify="left" if col == "platform" else "right")
    for c in result.platforms:
        fits = "yes" if c.fits_power and c.fits_budget else ("no (power)" if not c.fits_power else "no (budget)")
        mark = " *" if c.name == result.best else ""
        t.add_row(c.name + mark,
                  f"{c.throughput_per_node:,.1f}" + (f" ({c.throughput_source})" if c.throughput_source != "given" else ""),
                  f"{c.nodes:,}", f"{c.node_price:,.0f}", f"{c.total_cost:,.0f}",
                  f"{c.node_power_w:,.0f}" + _power_mark(c.power_source),
                  f"{c.total_power_kw:,.1f}", fits, f"{c.cost_per_event_s:.2f}", f"{c.watts_per_event_s:.3f}")
    console.print(t)
    # the reason of "no platform fits" begins with those words itself
    console.print(f"best: {result.best}. {result.why}" if result.best else result.why)
    console.print("(est.) = 1.6 x TDP x sockets, an estimate within 5 % of measured nodes; (RAPL) = CPU packages and DRAM "
                  "measured by a campaign, which undercounts the node; others measured at the node."
                  + (f"  Plot: {result.plot}" if result.plot else "") + f"  Campaign {result.campaign_id}.")


def _power_mark(source: str) -> str:
    """How a node power figure was obtained, as a short mark in the table."""
    if source.startswith("campaign"):
        return " (RAPL)" if "RAPL" in source else f" ({source.split(':')[0]})"
    return "" if source == "measured" else " (est.)"
