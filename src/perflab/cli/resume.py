"""perflab resume: finish an interrupted campaign of any study from what the store holds."""

from __future__ import annotations

import importlib

import click

from perflab.cli.common import emit_json, energy_option, json_option, make_console, open_energy, store_option
from perflab.cli.options import Count

# A study whose renderer is not report/terminal/<study>.py's render: (module, function).
RENDERERS = {"bundle-verify": ("bundle", "render_verify")}


@click.command(name="resume")
@click.argument("campaign", required=False, type=Count(1, 2**31 - 1))
@energy_option
@store_option
@json_option
def command(campaign, energy_source, db_url, json_path):
    """Finish an interrupted campaign (default: the newest one) without repeating stored runs.

    The study is planned again from its stored configuration and seed; every run already in the
    store is taken from there, only the missing runs are executed, and the campaign is closed.
    """

    from perflab.measure.executor import RealExecutor
    from perflab.store import open_store
    from perflab.studies import resumable, resume_study

    console = make_console(stderr=json_path == "-")
    with open_store(db_url) as store, RealExecutor() as executor:
        campaign = resumable(store, campaign).id  # nothing to resume: one line, before any other
        # The runs still to do are measured as the rest were: with energy where a source counts.
        meter = open_energy(energy_source, console)
        study, result = resume_study(store, campaign, executor, energy=meter,
                                     progress=lambda text: console.print(text, highlight=False))
        where, name = RENDERERS.get(study, (study, "render"))
        try:
            renderer = getattr(importlib.import_module(f"perflab.report.terminal.{where}"), name)
        except ModuleNotFoundError:
            renderer = None
        if renderer is not None:
            renderer(result, console)
        console.print(f"results: {store.display} (campaign {result.campaign_id}, resumed)", highlight=False)
        if json_path:
            emit_json(json_path, result.as_dict(), study)
