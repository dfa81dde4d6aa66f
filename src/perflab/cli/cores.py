"""perflab cores: find a persistently slow CPU, pinning the workload to each CPU in rounds (seed 001)."""

from __future__ import annotations

import click

from perflab.cli.common import make_console, resolve_target, run_and_render, study_output_options, target_options
from perflab.cli.options import PROBABILITY, Count, CpuList, Duration, Fraction, default_of, tune_options
from perflab.studies.cores.study import CoresConfig


class _Span(Duration):
    """A duration, or 0 (no waiting between blocks)."""

    def convert(self, value, param, ctx):
        if str(value).strip().lower() in ("0", "0s", "0.0"):
            return 0.0
        return super().convert(value, param, ctx)


@click.command(name="cores", context_settings={"ignore_unknown_options": True})
@click.option("--cpus", type=CpuList(), metavar="LIST", help="CPUs to scan, e.g. 0-7,16 (default: all usable).")
@click.option("--physical", is_flag=True, help="One thread per physical core.")
@click.option("--concurrent", is_flag=True,
              help="One copy on every scanned CPU at once per round (released together), as a farm node runs; "
                   "default: one CPU at a time, the others idle, so turbo and shared caches cannot blur the comparison.")
@click.option("--rounds", type=click.IntRange(2, 100000), default=default_of(CoresConfig, "rounds"), show_default=True,
              help="Most rounds (each round runs every CPU once).")
@click.option("--min-rounds", type=click.IntRange(2, 100000), default=None,
              help=f"Fewest rounds before the adaptive stop (default: {CoresConfig.min_rounds}, or --rounds where that is fewer).")
@click.option("--max-time", type=Duration(), default=default_of(CoresConfig, "max_time"), show_default=True, metavar="S",
              help="Stop measuring after S seconds.")
@click.option("--precision", type=Fraction(0, 1), default=default_of(CoresConfig, "precision"), show_default=True, metavar="P",
              help="Stop when every CPU's ratio CI half-width is within P and the smallest detectable slowdown is at "
                   "most twice --min-effect (a slow CPU's median must reach --min-effect, so its ratio must be "
                   "told from noise at twice that).")
@click.option("--min-effect", type=Fraction(0, 10), default=default_of(CoresConfig, "min_effect"), show_default=True, metavar="E", help="A slow CPU is at least E (fraction) slower than the rest.")
@click.option("--alpha", type=PROBABILITY, default=default_of(CoresConfig, "alpha"), show_default=True,
              help="Family-wise significance level over the CPUs (Holm).")
@click.option("--persistence", type=Fraction(0.5, 1.0001), default=default_of(CoresConfig, "persistence"), show_default=True,
              help="A slow CPU is back at the others' level in at most 1 - Q of the rounds; else it is intermittent.")
@click.option("--blocks", type=click.IntRange(1, 1000), default=default_of(CoresConfig, "blocks"), show_default=True,
              help="Spread the rounds over B time blocks; a CPU is slow only if slow in every block "
                   "(at most rounds / 2 blocks).")
@click.option("--span", type=_Span(), default=default_of(CoresConfig, "span"), show_default=True, metavar="S",
              help="The first and the last block start at least S seconds apart (the scan waits between "
                   "blocks where its rounds take less; at most 3/4 of --max-time); 0: no waiting.")
@click.option("--until-decided", is_flag=True,
              help="Add blocks (of --rounds / --blocks rounds, --span / (--blocks - 1) seconds apart) until every "
                   "CPU is shown slower than the rest by --min-effect or more, or shown not to (--alpha over all "
                   "looks and CPUs), or --max-runs / --max-time runs out; replaces the precision stop.")
@click.option("--max-runs", type=click.IntRange(2, 100000), default=None, metavar="N",
              help="With --until-decided: the most rounds (default 200).")
@click.option("--counters", is_flag=True,
              help="Wrap each run in perf stat (cycles, instructions): IPC and effective GHz per CPU, where the PMU has them.")
@click.option("--seed", type=Count(0, 2**63 - 1), default=default_of(CoresConfig, "seed"), show_default=True, help="Seed of the shuffled CPU order.")
@click.option("--timeout", type=Duration(), default=None, metavar="S",
              help="Kill a run after S seconds (stored as failed).")
@target_options
@study_output_options
@tune_options
def command(cpus, physical, concurrent, rounds, min_rounds, max_time, precision, min_effect, alpha, persistence,
            blocks, span, until_decided, max_runs, counters, seed, timeout, workload_name, config_path, shell, command_args, db_url, json_path, tune, metric):
    """Is one CPU persistently slower than the others? Pin the workload to each CPU, in rounds.

    A CPU's cost is divided by the median of the other CPUs in the same round (within a speed
    where runs have two). The rounds are spread over --blocks time blocks at least --span seconds
    apart; per CPU a t-test of its block levels, Holm-corrected. A CPU is slow when significant,
    slow in every block and nearly every round, and the blocks lie further apart than the
    machine's slowness holds; slow in some blocks only is contention there; back at the others'
    level in many rounds, intermittent; a slowdown in a few rounds, disturbance.
    """

    from perflab.errors import PerflabError
    from perflab.report.terminal.cores import render
    from perflab.studies.cores import study as cores

    if until_decided and (min_rounds is not None or precision != CoresConfig.precision):
        given = " and ".join(o for o, v in (("--min-rounds", min_rounds is not None),
                                              ("--precision", precision != CoresConfig.precision)) if v)
        raise PerflabError(f"{given} set the adaptive stop, which --until-decided replaces: drop {given}, "
                           "or drop --until-decided")
    workload = resolve_target(workload_name, command_args, shell, config_path, metric=metric)
    if min_rounds is None:  # a smaller --rounds wins over the default, as --max-runs does in run
        min_rounds = min(CoresConfig.min_rounds, rounds)
    config = CoresConfig(
        workload=workload, cpus=cpus, physical=physical, concurrent=concurrent, rounds=rounds,
        min_rounds=min_rounds, max_time=max_time, precision=precision, min_effect=min_effect, alpha=alpha,
        persistence=persistence, seed=seed, timeout=timeout, counters=counters, blocks=blocks, span=span,
        until_decided=until_decided, max_runs=max_runs,
    )
    result = run_and_render(cores, config, make_console(stderr=json_path == "-"),
                            lambda res, console: render(res, console, workload.name), db_url, json_path, tune=tune)
    if not any(r.runs for r in result.cpus):
        raise PerflabError(f"{result.verdict}: fix the workload; the failed runs are stored in campaign "
                           f"{result.campaign_id}")
