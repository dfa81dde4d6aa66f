"""`perflab cost PLATFORMS.toml`: the cheapest platform for a target event rate inside a power envelope."""

from __future__ import annotations

import click

from perflab.cli.common import emit_json, json_option, make_console, store_option
from perflab.cli.options import OutputPath, Positive


@click.command(name="cost")
@click.argument("platforms_toml", metavar="PLATFORMS.toml", type=click.Path(dir_okay=False))
@click.option("--plot", "plot_path", metavar="FILE.svg", type=OutputPath(dash=False),
              help="Write a plot of total cost against total power, with the envelope.")
@click.option("--target", type=Positive(), metavar="EVENTS/S",
              help="Override the requirement's target_events_per_s (or its target_score, in the score's unit).")
@click.option("--envelope", type=Positive(), metavar="KW", help="Override the requirement's power_envelope_kw.")
@store_option
@json_option
def command(platforms_toml, plot_path, target, envelope, db_url, json_path) -> None:
    """Nodes, cost and power per platform for the target rate; the best platform and why."""
    from dataclasses import replace

    from perflab.errors import PerflabError
    from perflab.store import open_store
    from perflab.report.cost_plot import plot
    from perflab.report.terminal.cost import render
    from perflab.studies.cost.study import load_platforms, run_cost

    config = load_platforms(platforms_toml)
    req = config.requirement
    if target is not None:
        if target <= 0:
            raise PerflabError("--target must be a positive event rate")
        req = replace(req, target_events_per_s=target)
    if envelope is not None:
        if envelope <= 0:
            raise PerflabError("--envelope must be a positive power in kW")
        req = replace(req, power_envelope_kw=envelope)
    config = replace(config, requirement=req, plot=plot_path)
    console = make_console(highlight=False, stderr=json_path == "-")
    with open_store(db_url) as store:
        result = run_cost(config, store, console, draw=plot)
    render(result, console)
    if json_path:
        emit_json(json_path, result.to_dict(), "cost")
