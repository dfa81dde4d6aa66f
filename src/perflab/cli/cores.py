"""perflab cores: find slow CPUs by pinning the workload to each in turn (seed 001)."""

from __future__ import annotations

import click

from perflab.cli.common import json_option, resolve_target, store_option, target_options


def _cpulist(ctx, param, value):
    if value is None:
        return None
    from perflab.errors import PerflabError
    from perflab.platform.sysfs import parse_cpulist

    try:
        cpus = parse_cpulist(value)
    except Exception:  # noqa: BLE001 - any parse failure is the same bad input
        cpus = []
    if not cpus:
        raise PerflabError(f"--cpus {value!r} is not a CPU list; write it like 0-3,8,10-11")
    return tuple(cpus)


@click.command(name="cores", context_settings={"ignore_unknown_options": True})
@click.option("--cpus", callback=_cpulist, metavar="LIST", help="CPUs to scan, e.g. 0-7,16 (default: all usable).")
@click.option("--physical", is_flag=True, help="One thread per physical core.")
@click.option("--rounds", default=30, show_default=True, help="Most rounds (each round runs every CPU once, shuffled).")
@click.option("--min-rounds", default=5, show_default=True, help="Fewest rounds before the precision stop.")
@click.option("--max-time", default=600.0, show_default=True, metavar="S", help="Stop measuring after S seconds.")
@click.option("--precision", default=0.02, show_default=True, metavar="P",
              help="Stop when every CPU's CI half-width is within P x its median.")
@click.option("--min-effect", default=0.02, show_default=True, metavar="E",
              help="A slow CPU is at least E (fraction) slower than the rest.")
@click.option("--alpha", default=0.05, show_default=True, help="Significance level after Holm's correction.")
@click.option("--seed", default=0, show_default=True, help="Seed of the shuffled CPU order.")
@click.option("--timeout", type=float, default=None, metavar="S", help="Kill a run after S seconds.")
@target_options
@store_option
@json_option
def command(cpus, physical, rounds, min_rounds, max_time, precision, min_effect, alpha, seed, timeout,
            workload_name, config_path, shell, command_args, db_url, json_path):
    """Is one CPU slower than the others? Pin the workload to each CPU in shuffled rounds.

    Per CPU: median time (or 1/metric, e.g. s per event) with a bootstrap CI; each CPU is
    tested against the pooled others (Mann-Whitney, Holm-corrected), with the ratio of medians
    as effect size. A slow physical core is reported once with its SMT siblings.
    """
    from rich.console import Console

    from perflab.measure.executor import default_executor
    from perflab.store import open_store
    from perflab.studies.cores import CoresConfig, render, run_cores

    workload = resolve_target(workload_name, command_args, shell, config_path)
    config = CoresConfig(
        workload=workload, cpus=cpus, physical=physical, rounds=rounds, min_rounds=min_rounds,
        max_time=max_time, precision=precision, min_effect=min_effect, alpha=alpha, seed=seed,
        timeout=timeout,
    )
    console = Console(stderr=json_path == "-")
    store = open_store(db_url)
    result = run_cores(config, default_executor(), store, console=console)
    render(result, console, workload.name)
    console.print(f"results: {store.display} (campaign {result.campaign_id})", highlight=False)
    if json_path:
        write_json(json_path, result.as_dict())


def write_json(path: str, data: dict) -> None:
    """The study's result as JSON at PATH ('-': stdout); NaN becomes null."""
    import json

    from perflab.store.db import dumps

    text = json.dumps(json.loads(dumps(data)), indent=2) + "\n"
    if path == "-":
        click.echo(text, nl=False)
    else:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
