"""perflab instances: throughput against the number of concurrent copies, per placement policy."""

from __future__ import annotations

import click

from perflab.cli.common import json_option, resolve_target, store_option, target_options


def _nlist(ctx, param, value):
    if value is None:
        return None
    from perflab.errors import PerflabError
    from perflab.platform.sysfs import parse_cpulist

    try:
        ns = parse_cpulist(value)
    except Exception:  # noqa: BLE001 - any parse failure is the same bad input
        ns = []
    if not ns or min(ns) < 1:
        raise PerflabError(f"--n {value!r} is not a list of copy counts >= 1; write it like 1-4,6,8")
    return tuple(ns)


@click.command(name="instances", context_settings={"ignore_unknown_options": True})
@click.option("--n", "ns", callback=_nlist, metavar="LIST", help="Copy counts, e.g. 1-4,6,8.")
@click.option("--max", "max_n", type=click.IntRange(min=1), metavar="N",
              help="Scan 1,2,3,4,6,8,12,... up to N (default: 2 x logical CPUs).")
@click.option("--policy", "policies", multiple=True, metavar="POLICY",
              type=click.Choice(["none", "compact", "spread", "smt-last", "numa"]),
              help="Placement policy (repeatable; default: every policy meaningful here).")
@click.option("--numa-pin", is_flag=True, help="numa policy: pin each copy to one CPU of its node.")
@click.option("--fork-master", is_flag=True,
              help="Also compare one unbound forking master with one bound master per NUMA node.")
@click.option("--reps", default=3, show_default=True, help="Repetitions of every (policy, N) point.")
@click.option("--plan", "plan_only", is_flag=True,
              help="Print where each copy would run (CPUs, memory node) for each policy and N; run nothing.")
@click.option("--root", "root_dir", metavar="DIR",
              help="With --plan: read the topology from this sysfs/proc snapshot instead of /.")
@click.option("--seed", default=0, show_default=True, help="Seed of the shuffled point order.")
@click.option("--timeout", type=float, default=None, metavar="S", help="Kill a copy after S seconds.")
@target_options
@store_option
@json_option
def command(ns, max_n, policies, numa_pin, fork_master, reps, plan_only, root_dir, seed, timeout,
            workload_name, config_path, shell, command_args, db_url, json_path):
    """How many concurrent copies give the most throughput, and where should they run?

    N copies start together through a gate; the aggregate throughput (the metric summed over
    the copies, or copies/s from wall time) is scanned against N for each placement policy,
    with the marginal gain per added copy, the optimum N and the smallest N within 1% of it.
    """
    from rich.console import Console

    from perflab.cli.cores import write_json
    from perflab.errors import PerflabError
    from perflab.measure.executor import default_executor
    from perflab.store import open_store
    from perflab.studies.instances import InstancesConfig, render, run_instances

    if ns and max_n:
        raise PerflabError("give either --n LIST or --max N, not both")
    if root_dir and not plan_only:
        raise PerflabError("--root only applies to --plan (runs happen on this machine); add --plan")
    if plan_only:
        import os

        from perflab.platform.sysfs import Root
        from perflab.platform.topology import read_topology
        from perflab.studies import placement
        from perflab.studies.instances import default_ns, render_plans

        if root_dir and not os.path.isdir(root_dir):
            raise PerflabError(f"--root {root_dir}: no such directory (give an unpacked sysfs snapshot)")
        topology = read_topology(Root(root_dir or "/"))
        ncpu = len(placement.usable_cpus(topology))
        chosen = list(policies) or [p for p in placement.POLICIES if p != "none"]
        render_plans(topology, ns or default_ns(max_n or 2 * ncpu), chosen, Console(), numa_pin)
        return
    workload = resolve_target(workload_name, command_args, shell, config_path)
    config = InstancesConfig(
        workload=workload, ns=ns, max_n=max_n, policies=tuple(policies) or None, reps=reps,
        fork_master=fork_master, numa_pin=numa_pin, seed=seed, timeout=timeout,
    )
    console = Console(stderr=json_path == "-")
    store = open_store(db_url)
    result = run_instances(config, default_executor(), store, console=console)
    render(result, console, workload.name)
    console.print(f"results: {store.display} (campaign {result.campaign_id})", highlight=False)
    if json_path:
        write_json(json_path, result.as_dict())
