"""perflab instances: machine throughput against the number of concurrent copies, per placement."""

from __future__ import annotations

import os

import click

from perflab.cli.common import (
    energy_option,
    make_console,
    monitor_options,
    open_energy,
    open_monitor,
    resolve_target,
    run_and_render,
    study_output_options,
    target_options,
)
from perflab.cli.options import Count, CountList, Duration, tune_options, default_of, percent_default
from perflab.errors import PerflabError
from perflab.platform.host import capture
from perflab.platform.sysfs import Root
from perflab.platform.affinity import usable_cpus
from perflab.report.terminal.instances import render, render_plans
from perflab.studies.instances import study as instances
from perflab.studies.instances import placement


MAX_COPIES = 65536


def _sequential(until_decided: bool, min_effect: str, min_runs: int, max_runs: int | None,
                max_time: float | None, reps: int) -> dict:
    """--until-decided and its budget as InstancesConfig fields; a budget without it is an error."""
    from perflab.cli.run import _percent

    given = [name for name, v in (("--max-runs", max_runs), ("--max-time", max_time)) if v is not None]
    if not until_decided:
        if given:
            raise PerflabError(f"{' and '.join(given)} bound --until-decided: add --until-decided, or drop them")
        return {}
    if reps != 5:
        raise PerflabError("--until-decided chooses the rounds itself: drop --reps, or bound it with --max-runs N")
    if max_runs is not None and max_runs < min_runs:
        raise PerflabError(f"--max-runs {max_runs} is below --min-runs {min_runs}: raise --max-runs")
    return dict(until_decided=True, min_effect=_percent(min_effect, "--min-effect"), min_runs=min_runs,
                max_runs=max_runs, max_time=max_time)


@click.command(name="instances", context_settings={"ignore_unknown_options": True})
@click.option("--n", "ns", type=CountList(1, MAX_COPIES), metavar="LIST", help="Copy counts, e.g. 1-4,6,8.")
@click.option("--max", "max_n", type=Count(1, MAX_COPIES), metavar="N",
              help="Scan 1,2,3,4,6,8,12,... up to N (default: 2 x usable CPUs / threads per copy).")
@click.option("--policy", "policies", multiple=True, metavar="POLICY",
              type=click.Choice(["none", "compact", "spread", "smt-last", "numa"]),
              help="Placement policy (repeatable; default: every policy meaningful here).")
@click.option("--numa-pin", is_flag=True, help="numa policy: pin each copy to one CPU of its node.")
@click.option("--threads-per-copy", "threads", type=Count(1, 1 << 16), default=1, show_default=True,
              metavar="T", help="Give each copy T CPUs of one NUMA node (cores first, then SMT siblings).")
@click.option("--fork-master", is_flag=True,
              help="Also compare one unbound forking master with one bound master per NUMA node, "
                   "on the same events and workers.")
@click.option("--reps", default=default_of(instances.InstancesConfig, "reps"), show_default=True, type=Count(1, 100_000),
              help="Rounds of every point (5 give a 94% interval for a median; an optimum needs 4 or more).")
@click.option("--until-decided", is_flag=True,
              help="Run rounds until every N past the CPU count is shown to gain --min-effect or more "
                   "over the best N at or below it, or shown not to (5% over all looks), or --max-runs "
                   "(default 60) / --max-time runs out; replaces --reps.")
@click.option("--min-effect", default=percent_default(instances.InstancesConfig, "min_effect"), show_default=True, metavar="PCT",
              help="With --until-decided: the smallest gain past the CPU count called, and the margin ruled out.")
@click.option("--min-runs", type=Count(2, 100_000), default=default_of(instances.InstancesConfig, "min_runs"), show_default=True,
              help="With --until-decided: the rounds of the first look.")
@click.option("--max-runs", type=Count(2, 100_000), help="With --until-decided: the most rounds (default 60).")
@click.option("--max-time", type=Duration(), metavar="S",
              help="With --until-decided: the most seconds of rounds (at the first round's pace).")
@click.option("--plan", "plan_only", is_flag=True,
              help="Print where each copy would run (CPUs, memory node) for each policy and N; run nothing.")
@click.option("--root", "root_dir", metavar="DIR",
              help="With --plan: read the topology from this sysfs/proc snapshot instead of /.")
@click.option("--seed", default=default_of(instances.InstancesConfig, "seed"), show_default=True, help="Seed of the shuffled point order.")
@click.option("--timeout", type=Duration(), default=None, metavar="S",
              help="Kill a copy after S seconds (the run is stored as failed and left out).")
@energy_option
@monitor_options(default=True)
@target_options
@study_output_options
@tune_options
def command(ns, max_n, policies, numa_pin, threads, fork_master, reps, until_decided, min_effect, min_runs,
            max_runs, max_time, plan_only, root_dir, seed, timeout, energy_source, monitor, monitor_interval, idle_s, workload_name, config_path, shell, command_args, db_url, json_path, tune, metric):
    """How many concurrent copies give the most throughput, and where should they run?

    N copies start together; machine throughput (total work over the makespan, first start to
    last finish) is scanned against N for each placement policy, with the marginal gain per added
    copy. The optimum is the smallest N not significantly below the best; an N past the CPU
    count only where it is significantly better than every N at or below it.
    """

    if ns and max_n is not None:
        raise PerflabError("give either --n LIST or --max N, not both")
    if root_dir and not plan_only:
        raise PerflabError("--root only applies to --plan (runs happen on this machine); add --plan")
    if plan_only:
        if root_dir and not os.path.isdir(root_dir):
            raise PerflabError(f"--root {root_dir}: no such directory (give an unpacked sysfs snapshot)")
        topology = capture(Root(root_dir or "/"), probes=False).topology
        placement.check_threads(topology, threads)
        ncpu = len(usable_cpus(topology))
        chosen = list(policies) or [p for p in placement.POLICIES if p != "none"]
        render_plans(topology, ns or instances.default_ns(max_n or max(1, 2 * ncpu // threads)), chosen,
                     make_console(), numa_pin, threads)
        return
    workload = resolve_target(workload_name, command_args, shell, config_path, metric=metric)
    config = instances.InstancesConfig(
        workload=workload, ns=ns, max_n=max_n, policies=tuple(policies) or None, reps=reps,
        fork_master=fork_master, numa_pin=numa_pin, threads_per_copy=threads, seed=seed, timeout=timeout,
        **_sequential(until_decided, min_effect, min_runs, max_runs, max_time, reps),
    )
    console = make_console(stderr=json_path == "-")
    machine = capture()
    instances.design(config, machine.topology)  # bad input fails here, before a campaign opens
    meter = open_energy(energy_source, console)
    watch = open_monitor(monitor, monitor_interval, idle_s, console)
    # Tuned, the copies may use only the benchmark CPUs: the study captures the machine once it
    # runs inside their cpuset (its allowed CPUs are then those), and plans on that.
    run_and_render(instances, config, console, lambda res, console: render(res, console, workload.name),
                   db_url, json_path, tune=tune, machine=None if tune.on else machine, energy=meter,
                   monitor=watch)
