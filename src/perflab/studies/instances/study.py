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
from typing import Any, Callable, Sequence

from perflab.errors import PerflabError
from perflab.model import RunResult, RunSpec, Workload
from perflab.platform.machine import Machine
from perflab.platform.topology import Topology
from perflab.platform.affinity import usable_cpus
from perflab.stats import knee, median, median_ci
from perflab.studies.instances import looks, placement
from perflab.studies.base import StudyConfig
from perflab.studies.instances.result import (
    MIN_LEVEL,
    InstancesResult,
    counter_ratio,
    ranking,
    unit_of,
    summed_metric,
    work_metric,
    Point,
    PolicyScan,
    fork_rows,
    fork_verdict,
    memory_at,
    point_energy,
    point_throughput,
    points_of,
)
from perflab.studies.cost.energy import energy_optimal, source_of
from perflab.studies.instances import power
from perflab.studies.instances.optimum import ALPHA, MIN_ROUNDS, choose

NAME = "instances"
WITHIN = 0.01  # "smallest N within 1% of the optimum"
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
        limit = looks.budget(config, _round_s([r for r in runs if int(r.params["round"]) == 0]))
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


def _key(r: Any) -> tuple:
    """A point of a round: its copies run together, so the slowest copy is the point's time."""
    return (r.params.get("policy"), r.params.get("mode"), r.params["n"])


def _past_count(config: InstancesConfig, d: Design, cpus: int) -> int:
    """The comparisons --until-decided makes: every policy's N past the CPU count."""
    return len(d.policies) * sum(n > cpus for n in d.ns)


def capacity(config: InstancesConfig, topology: Topology) -> int:
    """How many copies the usable CPUs hold at once (CPUs / threads per copy)."""
    return max(1, len(usable_cpus(topology)) // config.threads_per_copy)


def analyse(config: InstancesConfig, runs: Sequence[Any], ns: Sequence[int] | None = None,
            policies: Sequence[str] | None = None, cpus: int | None = None,
            stopped_by: str | None = None) -> InstancesResult:
    """Throughput per point, its CI, optimum (optimum.py) and knee per policy; fork rows
    and verdict. ``cpus``: copies the machine holds at once (None: unknown, no N is 'past').
    --until-decided: the points past the CPU count at the look's level (looks.py); ``stopped_by``
    'budget' or 'max-time' makes the last look spend what is left. Pure."""
    wl = config.workload
    work = work_metric(wl)
    summed = summed_metric(wl)
    scan_pts = points_of(runs, "policy")
    ns = list(ns) if ns is not None else sorted({n for _, n, _ in scan_pts})
    policies = list(policies) if policies is not None else list(dict.fromkeys(p for p, _, _ in scan_pts))
    failures: dict[str, int] = {}
    for r in runs:
        if not r.result.ok:
            reason = r.result.failure or "failed"
            failures[reason] = failures.get(reason, 0) + 1
    acc: dict[tuple[str, int], dict[str, list[float]]] = {}
    failed_pts: dict[tuple[str, int], int] = {}
    for (policy, n, _rnd), point in sorted(scan_pts.items(), key=lambda kv: kv[0][2]):
        results = [r.result for r in point]
        tp, why = point_throughput(results, work, summed)
        if tp is None:
            failed_pts[(policy, n)] = failed_pts.get((policy, n), 0) + 1
            if why and why.startswith("no "):
                failures[why] = failures.get(why, 0) + 1
            continue
        a = acc.setdefault((policy, n), {k: [] for k in ("tp", "own", "spread", "pss", "ipc", "llc",
                                                         "watts", "jpu")})
        a["tp"].append(tp)
        energy = point_energy(results, work)
        if energy is not None:
            a["watts"].append(energy[0])
            a["jpu"].append(energy[1])
        a["own"].extend(float(r.metrics[wl.primary_metric]) for r in results
                        if wl.primary_metric and wl.primary_metric in r.metrics)
        a["pss"].extend(float(r.metrics["pss_kb"]) for r in results if "pss_kb" in r.metrics)
        a["ipc"].extend(counter_ratio(results, "instructions", "cycles"))
        a["llc"].extend(counter_ratio(results, "LLC-load-misses", work))
        spread = results[0].health.get("start_spread_ns")
        if spread is not None:
            a["spread"].append(float(spread))
    seq = _sequential(config, acc, policies, cpus, runs, stopped_by) if config.until_decided else None
    scans = [_scan(p, ns, acc, failed_pts, cpus, seq[1].get(p) if seq else None) for p in policies]
    done = [s for s in scans if s.optimum_n is not None]
    best = max(done, key=lambda s: s.optimum_throughput) if done else None  # type: ignore[arg-type, return-value]  # set with optimum_n
    fork = fork_rows(ns, points_of(runs, "mode"), work) if config.fork_master else None
    notes = []
    if failures:
        notes.append(f"{sum(failures.values())} runs failed or gave no result and are left out: "
                     + ", ".join(f"{k} x{v}" for k, v in failures.items()))
    energy_n = None
    if best is not None:
        points = {p.n: (p.throughput, p.watts) for p in best.points
                  if p.throughput is not None and p.watts is not None}
        energy_n = energy_optimal(points)
    measured = [r.result for r in runs if r.result.energy]
    rounds = 1 + max((int(r.params["round"]) for r in runs), default=-1)
    if seq is None:
        rounds_needed, asked = _ask(scans, ns, cpus, config.reps)
    else:
        plan_, _, open_ = seq
        per_round = _round_s(runs)
        looks.settle(plan_, open_, config.min_effect, rounds, per_round)
        plan_.extra["compared"] = sum(len(v) for v in seq[1].values())
        rounds_needed, asked = plan_.needs_runs, looks.sentence(plan_, rounds, config.min_effect)
    reps = rounds if config.until_decided else config.reps
    return InstancesResult(
        sequential=seq[0].as_dict() if seq else None, min_effect=config.min_effect if seq else 0.0,
        rounds_needed=rounds_needed, asked=asked,
        energy_source=source_of(measured) if measured else None, energy_optimum_n=energy_n,
        unit=unit_of(wl), ns=list(ns), scans=scans, optimum_n=best.optimum_n if best else None,
        optimum_throughput=best.optimum_throughput if best else None,
        optimum_policy=best.policy if best else None, own_metric=wl.primary_metric,
        fork=fork, fork_verdict=fork_verdict(fork) if fork else None, failures=failures, notes=notes,
        level=median_ci(range(reps)).level, reps=reps, cpus=cpus, ranked_by=ranking(wl),
        own_higher_is_better=wl.higher_is_better, summed=summed is not None,
    )


def _ask(scans: Sequence[PolicyScan], ns: Sequence[int], cpus: int | None, reps: int) -> tuple[int | None, str]:
    """(rounds asked for, why) where the rounds ran at two speeds and no scan found a gain past
    the CPU count: the rounds that would compare within the speeds (power.py); (None, '') else."""
    if any(s.kind == "past" and s.significant for scan in scans for s in scan.steps):
        return None, ""
    seen = power.two_speeds([p.samples for scan in scans for p in scan.points if p.samples])
    if seen is None:
        return None, ""
    past = sum(1 for n in ns if cpus is not None and n > cpus)
    need = power.rounds_needed(seen, past, ALPHA)
    if need <= reps:
        return None, ""
    return need, power.sentence(seen, reps, need, past > 0)


def _round_s(runs: Sequence[Any]) -> float:
    """A round's time at this campaign's pace: each point's slowest copy, the median over rounds."""
    per: dict[int, dict[tuple, float]] = {}
    for r in runs:
        pts = per.setdefault(int(r.params["round"]), {})
        pts[_key(r)] = max(pts.get(_key(r), 0.0), r.result.wall_ns / 1e9)
    return median([sum(p.values()) for p in per.values()]) if per else 0.0


def _sequential(config: InstancesConfig, acc, policies: Sequence[str], cpus: int | None, runs: Sequence[Any],
                stopped_by: str | None):
    """--until-decided at the rounds measured: (the design's Plan, policy -> {N past the CPU count:
    (decision, ratio, CI)}, the undecided ones' (ratio, CI))."""
    samples = {p: {n: a["tp"] for (q, n), a in acc.items() if q == p} for p in policies}
    pairs = {p: looks.past_pairs(samples[p], cpus, MIN_ROUNDS) for p in policies}
    k = sum(len(v) for v in pairs.values())
    rounds = 1 + max((int(r.params["round"]) for r in runs), default=-1)
    first = _round_s([r for r in runs if int(r.params["round"]) == 0])
    limit = looks.budget(config, first)
    spent = sum(_round_s([r for r in runs if int(r.params["round"]) == i]) for i in range(rounds))
    final = (stopped_by in ("budget", "max-time") or rounds >= limit
             or (stopped_by is None and config.max_time is not None and spent >= config.max_time))
    plan_ = looks.plan_at(config, max(rounds, 2), limit, k, final)
    decided = {p: looks.decide_past(samples[p], pairs[p], plan_.level, config.min_effect) for p in policies}
    open_ = [(ratio, ci) for d in decided.values() for dec, ratio, ci in d.values() if not dec]
    return plan_, decided, open_


def _scan(policy: str, ns: Sequence[int], acc, failed_pts, cpus: int | None,
          decided: dict | None = None) -> PolicyScan:
    points: list[Point] = []
    prev: Point | None = None
    for n in ns:
        a = acc.get((policy, n))
        failed = failed_pts.get((policy, n), 0)
        if not a:
            points.append(Point(n, None, None, None, 0, failed))
            continue
        xs = a["tp"]
        t = median(xs)
        gain = None if prev is None else (t - prev.throughput) / (n - prev.n)
        # one round is no interval: "x (x-x), 0 %" claimed evidence that was not there
        pt = Point(n, t, median_ci(xs) if len(xs) > 1 else None, t / n, len(xs), failed, gain,
                   median(a["own"]) if a["own"] else None,
                   median(a["spread"]) / 1e3 if a["spread"] else None, list(xs),
                   median(a["pss"]) if a["pss"] else None, median(a["ipc"]) if a["ipc"] else None,
                   median(a["llc"]) if a["llc"] else None,
                   median(a["watts"]) if a["watts"] else None, median(a["jpu"]) if a["jpu"] else None)
        points.append(pt)
        prev = pt
    ok = [p for p in points if p.throughput is not None]
    if not ok:
        return PolicyScan(policy, points, None, None, None, reason="every point failed")
    # The ignores: `ok` holds only points with a throughput, which mypy cannot carry through a list.
    top = max(ok, key=lambda p: p.throughput)  # type: ignore[arg-type, return-value]  # see above
    within = min((p for p in ok if p.throughput >= (1 - WITHIN) * top.throughput), key=lambda p: p.n)  # type: ignore[operator]  # see above
    # Every repetition is a point of the fit, so 4 values of N with 3 reps are enough for a knee.
    xs = [float(p.n) for p in ok for _ in p.samples]
    ys = [x for p in ok for x in p.samples]
    k = knee(xs, ys) if len(set(xs)) >= 3 else None
    choice = choose({p.n: p.samples for p in ok}, cpus, decided=decided)
    at = next((p for p in ok if p.n == choice.optimum_n), None)
    return PolicyScan(policy, points, choice.optimum_n, at.throughput if at else None, within.n,
                      knee_n=None if k is None else k.x, best_n=choice.best_n, top_n=top.n,
                      steps=choice.steps, reason=choice.reason)
