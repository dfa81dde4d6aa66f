"""`perflab cost`'s section: the generic view of the CostResult (its platforms as a table) and
cost against power with the envelope."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perflab.report import plots
from perflab.report.generic import _plot, builder, generic, stored
from perflab.report.model import Section
from perflab.studies.cost.study import CostResult

if TYPE_CHECKING:
    from perflab.store import Campaign, Measurement


@builder("cost", CostResult.from_dict)
def cost_section(campaign: Campaign, result: CostResult, measurements: list[Measurement]) -> Section:
    sec = generic(campaign, stored(result.to_dict()))
    pts, env = cost_points(result)
    if pts:
        def make() -> str:
            return plots.scatter_labeled(pts, "total power [kW]", "total cost",
                                         ("power envelope", env) if env else None)
        _plot(sec, "Cost against power", make)
    return sec


def cost_points(result: CostResult) -> tuple[list[tuple[str, float, float, bool]], float | None]:
    """(name, kW, cost, fits power and budget) per platform, and the envelope in kW."""
    pts = [(p.name, p.total_power_kw, p.total_cost, p.fits_power and p.fits_budget) for p in result.platforms]
    return pts, result.requirement.power_envelope_kw
