"""How many concurrent copies give the most throughput, and what does NUMA placement gain?
(seed 004: machine throughput against the number of instances; one forking master per NUMA node)

For each placement policy and each N, N copies start together through a gate. Machine throughput
is the total fixed work of the copies (their ``events``, or one unit per copy) over the makespan,
from the first start to the last finish, as SPEC rate does: copies that do not overlap do not add
up. A primary metric declared higher is better with no work count (a fixed-time benchmark's
score, frames/s) is a rate each copy measures while all run together: the point's throughput is
its sum over the copies ("total fps"), since copies/s would grow with N forever for a program that
runs a fixed time. A lower-is-better one (which may be CPU time) is shown beside, never summed. Points
run ``reps`` rounds in a shuffled order; each point's median carries an order-statistic CI with
its real level. ``fork_master`` compares one unbound master forking N workers with one master per
NUMA node bound to it, on the same total events (disjoint shares) and the same N workers, paired
per round and judged by an exact sign test over all pairs (see result.py).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from itertools import groupby
from typing import Any, Callable

from perflab.errors import PerflabError
from perflab.model import RunResult, RunSpec, Workload
from perflab.platform.machine import Machine
from perflab.platform.topology import Topology
from perflab.platform.affinity import usable_cpus
from perflab.stats import median_ci
from perflab.studies.instances import looks, placement
from perflab.studies.base import StudyConfig
from perflab.studies.instances.result import (
    MIN_LEVEL,
    InstancesResult,
    memory_at,
)
from perflab.studies.instances.optimum import MIN_ROUNDS
from perflab.studies.instances.analysis import analyse, round_s

NAME = "instances"
Result = InstancesResult
# Counted around every scan copy where the PMU has them: IPC and LLC misses per event vs copies.
COUNTERS = ("cycles", "instructions", "LLC-load-misses")


def pmu(machine: Machine) -> tuple[bool, str]:
    """(hardware counters usable, why) from the probe the machine capture recorded."""
    probe = (machine.metadata.get("probes") or {}).get("hw_counters") or {}
    return bool(probe.get("available")), str(probe.get("reason") or "no probe recorded")


@dataclass(frozen=True)
class InstancesConfig(StudyConfig):
    workload: Workload
    ns: tuple[int, ...] | None = None  # None: default_ns(2 x usable CPUs / threads, or max_n)
    max_n: int | None = None
    policies: tuple[str, ...] | None = None  # None: every policy meaningful on this machine
    reps: int = 5  # 5 rounds: min..max of a median is a 93.75 % interval
    fork_master: bool = False
    numa_pin: bool = False  # numa policy: one CPU per copy instead of the node's CPU set
    threads_per_copy: int = 1
    seed: int = 0
    timeout: float | None = None
    # --until-decided: rounds until every N past the CPU count gains min_effect or is ruled out (looks.py)
    until_decided: bool = False
    min_effect: float = 0.05
    min_runs: int = 5  # the first look, in rounds
    max_runs: int | None = None  # the budget in rounds (looks.DEFAULT_BUDGET where None)
    max_time: float | None = None  # seconds: the rounds it holds at the first round's pace

    decoders = {"workload": Workload.from_dict}


Config = InstancesConfig


@dataclass(frozen=True)
class Design:
    ns: list[int]
    policies: list[str]
    notes: list[str]
    fork_events: int | None  # total events of the fork comparison, the same in both modes


def default_ns(limit: int) -> list[int]:
    """1, 2, 3, 4, 6, 8, 12, 16, 24, 32, ... (x1.5 / x1.33 steps) up to and including limit."""
    out = []
    k = 1
    while k <= limit:
        out.append(k)
        if k < 4:
            k += 1
        else:
            k = k * 3 // 2 if (k & (k - 1)) == 0 else k * 4 // 3
    if out[-1] != limit:
        out.append(limit)
    return out


def default_policies(topology: Topology) -> tuple[list[str], list[str]]:
    """Policies worth running here, and one line per policy skipped as identical to another."""
    n_nodes = len(placement.numa_nodes_with_cpus(topology))
    chosen = ["none", "compact"]
    skipped = []
    if topology.smt or len(topology.sockets) > 1 or n_nodes > 1:
        chosen += ["spread", "smt-last"] if topology.smt else ["spread"]
    else:
        skipped.append("spread, smt-last skipped: no SMT, one socket, one NUMA node (== compact)")
    if n_nodes > 1:
        chosen.append("numa")
    else:
        skipped.append("numa skipped: 1 NUMA node (numa == compact); ask for it with --policy numa")
    return chosen, skipped


def fork_events(workload: Workload) -> int:
    """Total events of the fork comparison: the value the workload's command gives the option
    that precedes '{events}' in its fork template (the last occurrence wins)."""
    tpl = workload.fork_arg or ()
    if "{events}" not in tpl or "{first}" not in tpl or tpl.index("{events}") == 0:
        raise PerflabError(
            f"workload '{workload.name}': fork_arg {list(tpl)} needs {{first}} and {{events}} placeholders "
            "so both fork modes process the same events; add them (minihlt has them)")
    option = tpl[tpl.index("{events}") - 1]
    argv = list(workload.argv)
    found = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == option]
    if not found or not found[-1].isdigit() or int(found[-1]) < 1:
        raise PerflabError(f"--fork-master needs a fixed event count: give the workload '{option} N' "
                           f"(e.g. perflab instances -w {workload.name} --fork-master -- {option} 100)")
    return int(found[-1])


def design(config: InstancesConfig, topology: Topology) -> Design:
    """The points to run (N values, policies) and notes; bad input raises PerflabError."""
    if config.reps < 1:
        raise PerflabError(f"--reps must be at least 1, got {config.reps}")
    if config.max_n is not None and config.max_n < 1:
        raise PerflabError(f"--max must be at least 1, got {config.max_n}")
    if config.timeout is not None and not 0 < config.timeout < float("inf"):
        raise PerflabError(f"--timeout must be a finite number of seconds > 0, got {config.timeout}")
    if config.fork_master and config.workload.fork_arg is None:
        raise PerflabError(
            f"workload '{config.workload.name}' has no fork argument, so --fork-master cannot apply; "
            "use a workload with fork_arg (minihlt) or drop --fork-master")
    placement.check_threads(topology, config.threads_per_copy)
    events = fork_events(config.workload) if config.fork_master else None
    ncpu = len(usable_cpus(topology))
    t = config.threads_per_copy
    ns = sorted(set(config.ns)) if config.ns else default_ns(config.max_n or max(1, 2 * ncpu // t))
    if ns[0] < 1:
        raise PerflabError(f"instance counts must be at least 1, got {ns[0]} (fix --n)")
    notes: list[str] = []
    if config.policies:
        policies = list(dict.fromkeys(config.policies))
        for p in policies:
            if p not in placement.POLICIES:
                raise PerflabError(f"unknown policy {p!r}: choose from {', '.join(placement.POLICIES)}")
    else:
        policies, notes = default_policies(topology)
    for p in policies:
        for note in dict.fromkeys(n for k in ns for n in placement.plan_notes(topology, k, p, t)
                                  if "oversubscribed" not in n):
            notes.append(f"{p}: {note}")
    if ns[-1] * t > ncpu:
        notes.append(f"N above {ncpu // t} oversubscribes the {ncpu} usable CPUs "
                     "(bound policies reuse CPUs round-robin)")
    if config.until_decided and config.min_runs < MIN_ROUNDS:
        raise PerflabError(f"--min-runs {config.min_runs}: a look needs {MIN_ROUNDS} rounds a point to "
                           f"compare two (give --min-runs {MIN_ROUNDS} or more)")
    if config.until_decided and ns[-1] * t <= ncpu:
        notes.append(f"--until-decided decides the N past the {ncpu // t} CPUs, and this scan has none "
                     f"(--n up to {ns[-1]}): it stops at its first look")
    level = median_ci(range(config.reps)).level
    if config.reps < MIN_ROUNDS:
        notes.append(f"{config.reps} round{'s' * (config.reps != 1)} per point: too few to test one N "
                     f"against another (needs {MIN_ROUNDS}), so no optimum is named; use --reps 5")
    elif level < MIN_LEVEL:
        notes.append(f"{config.reps} rounds give {level:.0%} intervals for a median; "
                     "use --reps 5 or more for 90 %")
    if events is not None and len(placement.numa_nodes_with_cpus(topology)) == 1:
        notes.append("fork-master: 1 NUMA node, so 'NUMA' is one master bound to that node "
                     "(the gain measures binding alone)")
    if events is not None and events < 2 * ns[-1]:
        notes.append(f"fork-master: {events} events for up to {ns[-1]} workers: few events per worker, "
                     "so start-up and the slowest event weigh heavily; give more events")
    return Design(ns, policies, notes, events)


def _fork_argv(workload: Workload, workers: int, first: int, events: int) -> tuple[str, ...]:
    values = {"{n}": str(workers), "{first}": str(first), "{events}": str(events)}
    return workload.argv + tuple(values.get(a, a) for a in workload.fork_arg or ())


def _fork_specs(config: InstancesConfig, topology: Topology, mode: str, n: int, events: int,
                rnd: int) -> list[RunSpec]:
    """One unbound master with n workers, or one bound master per node with disjoint event shares."""
    wl = config.workload
    label = f"fork-{mode}/n={n}"
    if mode == "no-numa":
        return [wl.spec(argv=_fork_argv(wl, n, 0, events), timeout=config.timeout, label=label,
                        sample_pss=True, params={"mode": mode, "n": n, "master": 0, "round": rnd})]
    masters = placement.fork_masters(topology, n)
    shares = placement.apportion(events, [workers for _, workers, _ in masters])
    specs, first = [], 0
    for i, ((node, workers, cpus), share) in enumerate(zip(masters, shares)):
        specs.append(wl.spec(argv=_fork_argv(wl, workers, first, share), cpus=cpus, mem_node=node,
                             timeout=config.timeout, label=label, sample_pss=True,
                             params={"mode": mode, "n": n, "master": i, "round": rnd}))
        first += share
    return specs


def plan(config: InstancesConfig, machine: Machine) -> list[RunSpec]:
    """Every copy of every round: points shuffled per round, copies of a point adjacent."""
    topology = machine.topology
    d = design(config, topology)
    counters = COUNTERS if pmu(machine)[0] else None
    rng = random.Random(config.seed)
    points: list[tuple[str, Any, int]] = [("scan", p, n) for p in d.policies for n in d.ns]
    if d.fork_events is not None:
        points += [("fork", mode, n) for mode in ("no-numa", "numa") for n in d.ns]
    specs: list[RunSpec] = []
    # --until-decided: the budget's rounds; execute stops at the look that decides
    for rnd in range(rounds_planned(config)):
        order = list(points)
        rng.shuffle(order)
        for kind, what, n in order:
            if kind == "fork":
                specs.extend(_fork_specs(config, topology, what, n, d.fork_events, rnd))  # type: ignore[arg-type]  # set with fork points
                continue
            slots = placement.plan(topology, n, what, numa_pin=config.numa_pin,
                                   threads=config.threads_per_copy)
            specs.extend(config.workload.spec(
                cpus=s.affinity, mem_node=s.mem_node, timeout=config.timeout, label=f"{what}/n={n}",
                sample_pss=True, perf_events=counters,
                params={"policy": what, "n": n, "copy": s.copy, "round": rnd}) for s in slots)
    return specs


def rounds_planned(config: InstancesConfig) -> int:
    return (config.max_runs or looks.DEFAULT_BUDGET) if config.until_decided else config.reps


@dataclass
class Run:
    """One stored copy: its design key and what it measured (a store Measurement fits too)."""

    params: dict
    result: RunResult


def run_copies(specs: list[RunSpec], session, word: str, reps: int,
               stop: Callable[[int, list[Run]], bool] | None = None) -> list[Run]:
    """Each point's copies (the specs of one round and label) released together through the
    session, stored as they finish; ``word`` names a round in the progress line. ``stop``: asked
    after each round (its number, the runs so far) whether to end there."""
    runs: list[Run] = []
    batches = [list(g) for _, g in groupby(specs, key=lambda s: (s.params["round"], s.label))]
    for i, batch in enumerate(batches):
        rnd = batch[0].params["round"]
        out = session.run_concurrent(batch, rep=rnd, together=True)
        runs.extend(Run(dict(s.params), r) for s, r in zip(batch, out.results))
        if i + 1 == len(batches) or batches[i + 1][0].params["round"] != rnd:
            session.say(f"{word} {rnd + 1}/{reps} done")
            if stop is not None and i + 1 < len(batches) and stop(rnd, runs):
                break
    return runs


def execute(config: InstancesConfig, session, machine: Machine) -> InstancesResult:
    """Run every point's copies together through the session (stored as they finish), analyse."""
    d = design(config, machine.topology)
    specs = plan(config, machine)
    cpus = capacity(config, machine.topology)
    stopped = {"by": "budget" if config.until_decided else ""}
    now = session.executor.now_ns
    t0 = now()

    def look(rnd: int, runs: list[Run]) -> bool:
        """--until-decided, after round ``rnd``: the budget's end, --max-time, or a look that decides."""
        rounds = rnd + 1
        limit = looks.budget(config, round_s([r for r in runs if int(r.params["round"]) == 0]))
        if rounds >= limit or (config.max_time is not None and (now() - t0) / 1e9 >= config.max_time):
            stopped["by"] = "budget" if rounds >= limit else "max-time"
            return True
        if not _past_count(config, d, cpus) and rounds >= looks.first(config):
            # nothing past the CPU count to decide: the N at or below it are tested as without
            # looks, on the first look's rounds (a later look would only add rounds)
            stopped["by"] = "nothing to decide"
            return True
        res = analyse(config, runs, d.ns, d.policies, cpus, stopped_by="look") if looks.due(
            config, rounds, limit, max(1, _past_count(config, d, cpus))) else None
        if res is not None and res.sequential and res.sequential["decided"]:
            stopped["by"] = "decided"
            return True
        return False

    runs = run_copies(specs, session, "round", rounds_planned(config), look if config.until_decided else None)
    result = analyse(config, runs, d.ns, d.policies, cpus, stopped_by=stopped["by"] or None)
    has_pmu, why = pmu(machine)
    result.notes = d.notes + result.notes + ([] if has_pmu else [
        f"IPC and last-level-cache misses per event not measured: {why}"])
    for row in result.fork or []:
        masters = placement.fork_masters(machine.topology, row.n)
        shares = placement.apportion(d.fork_events, [w for _, w, _ in masters])  # type: ignore[arg-type]  # set with fork rows
        row.masters = [[node, w, e] for (node, w, _), e in zip(masters, shares)]
    if result.optimum_n is not None and result.optimum_policy is not None:  # found together
        slots = placement.plan(machine.topology, result.optimum_n, result.optimum_policy,
                               numa_pin=config.numa_pin, threads=config.threads_per_copy)
        nodes = {s.copy: s.mem_node if s.mem_node is not None else
                 machine.topology.cpu(s.cpus[0]).node if s.cpus else "any" for s in slots}
        result.memory = memory_at(runs, nodes, result.optimum_policy, result.optimum_n)
    return result


def _past_count(config: InstancesConfig, d: Design, cpus: int) -> int:
    """The comparisons --until-decided makes: every policy's N past the CPU count."""
    return len(d.policies) * sum(n > cpus for n in d.ns)


def capacity(config: InstancesConfig, topology: Topology) -> int:
    """How many copies the usable CPUs hold at once (CPUs / threads per copy)."""
    return max(1, len(usable_cpus(topology)) // config.threads_per_copy)
