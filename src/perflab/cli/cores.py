"""perflab cores: find a persistently slow CPU, pinning the workload to each CPU in rounds (seed 001)."""

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


def _fraction(name: str, low: float, high: float):
    def check(ctx, param, value):
        from perflab.errors import PerflabError

        if value is not None and not low < value < high:
            raise PerflabError(f"{name} {value} must lie between {low:g} and {high:g} (exclusive)")
        return value

    return check


@click.command(name="cores", context_settings={"ignore_unknown_options": True})
@click.option("--cpus", callback=_cpulist, metavar="LIST", help="CPUs to scan, e.g. 0-7,16 (default: all usable).")
@click.option("--physical", is_flag=True, help="One thread per physical core.")
@click.option("--concurrent", is_flag=True,
              help="One copy on every scanned CPU at once per round (gated start), as a farm node runs; "
                   "default: one CPU at a time (seed 001's method).")
@click.option("--rounds", type=click.IntRange(2, 100000), default=30, show_default=True,
              help="Most rounds (each round runs every CPU once).")
@click.option("--min-rounds", type=click.IntRange(2, 100000), default=5, show_default=True,
              help="Fewest rounds before the adaptive stop.")
@click.option("--max-time", type=click.FloatRange(0, 1e9), default=600.0, show_default=True, metavar="S",
              help="Stop measuring after S seconds.")
@click.option("--precision", type=float, default=0.03, show_default=True, metavar="P",
              callback=_fraction("--precision", 0, 1),
              help="Stop when every CPU's ratio CI half-width is within P (and a --min-effect slowdown is detectable).")
@click.option("--min-effect", type=float, default=0.02, show_default=True, metavar="E",
              callback=_fraction("--min-effect", 0, 10), help="A slow CPU is at least E (fraction) slower than the rest.")
@click.option("--alpha", type=float, default=0.05, show_default=True, callback=_fraction("--alpha", 0, 1),
              help="Family-wise significance level over the CPUs (Holm).")
@click.option("--persistence", type=float, default=0.9, show_default=True, callback=_fraction("--persistence", 0.5, 1.0001),
              help="A slow CPU is slow in at least this share of the rounds; else it is reported as disturbed.")
@click.option("--counters", is_flag=True,
              help="Wrap each run in perf stat (cycles, instructions): IPC and effective GHz per CPU, where the PMU has them.")
@click.option("--seed", default=0, show_default=True, help="Seed of the shuffled CPU order.")
@click.option("--timeout", type=click.FloatRange(0, 1e9, min_open=True), default=None, metavar="S",
              help="Kill a run after S seconds (stored as failed).")
@target_options
@store_option
@json_option
def command(cpus, physical, concurrent, rounds, min_rounds, max_time, precision, min_effect, alpha, persistence,
            counters, seed, timeout, workload_name, config_path, shell, command_args, db_url, json_path):
    """Is one CPU persistently slower than the others? Pin the workload to each CPU, in rounds.

    Each round is a block: a CPU's cost is divided by the median of the other CPUs in the same
    round. Friedman's test says whether any CPU differs; per CPU a one-sided Wilcoxon signed-rank
    test of its per-round ratios, Holm-corrected. A CPU is slow only when it is slower in nearly
    every round (--persistence); a slowdown confined to some rounds is reported as disturbance.
    """
    from rich.console import Console

    from perflab.errors import PerflabError
    from perflab.measure.executor import RealExecutor
    from perflab.report.terminal.cores import render
    from perflab.store import open_store
    from perflab.studies import cores, run_study

    workload = resolve_target(workload_name, command_args, shell, config_path)
    config = cores.CoresConfig(
        workload=workload, cpus=cpus, physical=physical, concurrent=concurrent, rounds=rounds,
        min_rounds=min_rounds, max_time=max_time, precision=precision, min_effect=min_effect, alpha=alpha,
        persistence=persistence, seed=seed, timeout=timeout, counters=counters,
    )
    console = Console(stderr=json_path == "-")

    def progress(text: str) -> None:
        console.print(text, highlight=False)

    with open_store(db_url) as store, RealExecutor() as executor:
        result = run_study(cores, config, store, executor, progress=progress)
        render(result, console, workload.name)
        console.print(f"results: {store.display} (campaign {result.campaign_id})", highlight=False)
        if json_path:
            write_json(json_path, result.as_dict())
        if not any(r.runs for r in result.cpus):
            raise PerflabError(f"{result.verdict}: fix the workload; the failed runs are stored in campaign "
                               f"{result.campaign_id}")


def write_json(path: str, data: dict) -> None:
    """The study's result as JSON at PATH ('-': stdout); NaN becomes null."""
    import json

    from perflab.store.db import dumps

    text = json.dumps(json.loads(dumps(data)), indent=2) + "\n"
    if path == "-":
        click.echo(text, nl=False)
    else:
        try:
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            from perflab.errors import PerflabError

            raise PerflabError(f"cannot write --json {path}: {exc.strerror}; the results are in the store") from None
