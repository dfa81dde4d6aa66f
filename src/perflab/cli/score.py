"""perflab score: a HEPscore-style suite score of this machine, its export, and two scores compared."""

from __future__ import annotations

import click

from perflab.cli.common import (
    emit_json,
    energy_option,
    make_console,
    open_energy,
    run_and_render,
    study_output_options,
)
from perflab.cli.options import Count, Duration
from perflab.errors import PerflabError
from perflab.report.terminal.score import render, render_difference
from perflab.studies.score import hepjson, study
from perflab.studies.score.stored import difference, load_campaign
from perflab.studies.score.suite import load_suite


@click.command(name="score")
@click.option("--suite", "suite_name", default="minihlt", show_default=True, metavar="NAME",
              help="The suite: [suite.NAME] of perflab.toml, or the built-in 'minihlt'.")
@click.option("--config", "config_path", metavar="FILE", type=click.Path(dir_okay=False),
              help="perflab.toml defining the suite and its workloads (default: ./perflab.toml if present).")
@click.option("--reps", type=Count(1, 1000), default=None, metavar="N",
              help="Repetitions of every workload (default: the suite's, 3 when it names none).")
@click.option("--copies", type=Count(1, 65536), default=None, metavar="N",
              help="Copies per workload (default: the suite's, else usable CPUs / threads per copy).")
@click.option("--seed", default=0, show_default=True, help="Seed of the shuffled workload order.")
@click.option("--timeout", type=Duration(), default=None, metavar="S", help="Kill a copy after S seconds.")
@click.option("--campaign", "campaign_id", type=Count(1, 2**31 - 1), default=None, metavar="ID",
              help="Run nothing: show (or --export) the stored score campaign ID (measured or imported).")
@click.option("--compare", "compare_ids", type=Count(1, 2**31 - 1), nargs=2, default=None, metavar="A B",
              help="Run nothing: test whether the stored score campaigns A and B (one suite) differ.")
@click.option("--export", "export", type=(click.Choice(["hep-suite"]), click.Path(dir_okay=False)), default=None,
              metavar="FORMAT FILE", help="Also write the score as a HEP Benchmark Suite report (hep-suite) to FILE.")
@energy_option
@study_output_options
def command(suite_name, config_path, reps, copies, seed, timeout, campaign_id, compare_ids, export,
            energy_source, db_url, json_path):
    """Score this machine on a suite of workloads, HEPscore's way, with intervals.

    Each workload runs at full load (copies filling the machine) for each repetition; its ratio is
    the median repetition's node throughput over the reference machine's, and the score is the
    scaling times the weighted geometric mean of the ratios, with score per core and per watt.
    perflab adds a confidence interval on each ratio and on the score, names repetitions that
    disagree and copies that run slower, and tests two machines' scores against each other.
    """
    from perflab.store import open_store

    if campaign_id is not None and compare_ids:
        raise PerflabError("give either --campaign ID or --compare A B, not both")
    if campaign_id is not None or compare_ids:
        ctx = click.get_current_context()
        given = [f"--{n}" for n in ("reps", "copies", "timeout", "seed")
                 if ctx.get_parameter_source(n) != click.core.ParameterSource.DEFAULT]
        if given:
            raise PerflabError(f"{given[0]} applies to a suite being measured; --campaign and --compare "
                               "run nothing (drop it, or run the suite)")
    console = make_console(stderr=json_path == "-")
    if compare_ids:
        if export:
            raise PerflabError("--export writes one score: give --campaign ID with it, not --compare")
        with open_store(db_url) as store:
            a, b = (load_campaign(store, i) for i in compare_ids)
        diff, why = difference(a, b)
        render_difference(a, b, diff, why, 1 - a.level, console)
        return
    if campaign_id is not None:
        with open_store(db_url) as store:
            result = load_campaign(store, campaign_id)
        render(result, console)
    else:
        result = _measure(suite_name, config_path, reps, copies, seed, timeout, energy_source, db_url,
                          json_path, console)
    if export:
        hepjson.write(result, export[1])
        console.print(f"perflab: wrote {export[1]} (HEP Benchmark Suite layout {hepjson.JSON_VERSION}, "
                      f"perflab's intervals under '{hepjson.OWN_KEY}')", highlight=False)
    if json_path and campaign_id is not None:
        emit_json(json_path, result.as_dict(), "score")


def _measure(suite_name, config_path, reps, copies, seed, timeout, energy_source, db_url, json_path, console):
    from perflab.platform.host import capture
    from perflab.workloads import resolve

    suite = load_suite(suite_name, config_path)
    workloads = tuple(resolve(w.workload, ("--", *w.args) if w.args else (), config_path=config_path)
                      for w in suite.workloads)
    config = study.ScoreConfig(suite=suite, workloads=workloads, repetitions=reps, copies=copies, seed=seed,
                               timeout=timeout)
    machine = capture()
    study.check(config, machine)  # bad input fails here, before a campaign opens
    meter = open_energy(energy_source, console)
    return run_and_render(study, config, console, render, db_url, json_path, machine=machine, energy=meter)
