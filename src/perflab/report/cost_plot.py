"""`perflab cost --plot FILE.svg`: total cost against total power per platform, with the envelope."""

from __future__ import annotations

from pathlib import Path

from perflab.studies.cost.study import CostResult


def plot(result: CostResult, path: str) -> str:
    """Total cost against total power per platform, with the power envelope, as SVG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    req = result.requirement
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for c in result.platforms:
        color = "tab:green" if c.name == result.best else ("tab:blue" if c.fits_power else "tab:red")
        ax.scatter([c.total_power_kw], [c.total_cost / 1e6], color=color, s=40, zorder=3)
        ax.annotate(f"{c.name} ({c.nodes})", (c.total_power_kw, c.total_cost / 1e6),
                    textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.axvline(req.power_envelope_kw, color="tab:red", linestyle="--", label=f"envelope {req.power_envelope_kw:g} kW")
    xmax = max(max(c.total_power_kw for c in result.platforms), req.power_envelope_kw) * 1.15
    ax.axvspan(req.power_envelope_kw, xmax, color="tab:red", alpha=0.07)
    if req.budget is not None:
        ax.axhline(req.budget / 1e6, color="tab:orange", linestyle=":", label="budget")
    ax.set_xlim(0, xmax)
    ax.set_ylim(0, None)
    ax.set_xlabel("total power (kW)")
    ax.set_ylabel(f"total cost (M{req.currency})")
    ax.set_title(f"{req.target_events_per_s:,.0f} {req.unit}: cost vs power (nodes in brackets)", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, format="svg")
    plt.close(fig)
    return str(Path(path).absolute())
