"""A HEPscore-style suite score measured on this machine, through the instances machinery.

Each workload of the suite runs at full load: ``copies`` copies (default: the usable CPUs over the
threads per copy) started together through the gate, placed compactly as `perflab instances` places
them; the node's throughput of one repetition is the instances study's point throughput (the copies'
total work over the makespan, or the sum of a per-copy rate). Every copy is stored as it completes.
Repetitions interleave the workloads in a shuffled order per repetition (A B C, C A B, ...), so drift
spreads over all of them instead of landing on the last. Per workload the ratio to its reference
and the score follow HEPscore's arithmetic (method.py); the intervals and flags are perflab's.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass
from typing import Any, Sequence

from perflab.errors import PerflabError
from perflab.model import RunSpec, Workload
from perflab.platform.machine import Machine
from perflab.platform.affinity import usable_cpus
from perflab.studies.base import StudyConfig
from perflab.studies.cost.energy import source_of
from perflab.studies.instances import placement
from perflab.studies.instances.study import Run, run_copies  # noqa: F401 (Run: a score campaign's copies, as instances keeps them)
from perflab.studies.instances.result import point_energy, point_throughput, summed_metric, unit_of, work_metric
from perflab.studies.score.analysis import analyse_workloads
from perflab.studies.score.result import ScoreResult, WorkloadScore
from perflab.studies.score.suite import Suite

NAME = "score"
POWER_FACTOR = 1.6  # seed 004: a node draws about 1.6 x TDP x sockets under full load
Result = ScoreResult


def _workloads(items: Any) -> tuple[Workload, ...]:
    return tuple(Workload.from_dict(w) for w in items)


@dataclass(frozen=True)
class ScoreConfig(StudyConfig):
    suite: Suite
    workloads: tuple[Workload, ...]  # resolved, one per suite workload, in its order
    repetitions: int | None = None  # None: the suite's
    copies: int | None = None  # None: the suite's (None there: fill the machine)
    seed: int = 0
    timeout: float | None = None

    decoders = {"suite": Suite.from_dict, "workloads": _workloads}

    @property
    def reps(self) -> int:
        return self.repetitions or self.suite.repetitions


Config = ScoreConfig


def copies_for(config: ScoreConfig, machine: Machine) -> int:
    """Copies per workload: asked, the suite's, or the usable CPUs over the threads per copy."""
    n = config.copies or config.suite.copies
    if n is not None:
        return n
    return max(1, len(usable_cpus(machine.topology)) // config.suite.threads_per_copy)


def check(config: ScoreConfig, machine: Machine) -> None:
    """Bad input as one PerflabError before a campaign opens."""
    if config.reps < 1:
        raise PerflabError(f"--reps must be at least 1, got {config.reps}")
    if len(config.workloads) != len(config.suite.workloads):
        raise PerflabError("the suite's workloads and the resolved ones differ; rerun perflab score")
    placement.check_threads(machine.topology, config.suite.threads_per_copy)
    for w in config.workloads:
        if w.primary_metric is None or not w.higher_is_better:
            raise PerflabError(f"workload '{w.name}': a score needs a throughput (a primary metric declared "
                               "higher is better, e.g. events_per_s); set it in perflab.toml")


def plan(config: ScoreConfig, machine: Machine) -> list[RunSpec]:
    """Every copy of every repetition; workloads shuffled per repetition, a point's copies adjacent."""
    check(config, machine)
    n = copies_for(config, machine)
    slots = placement.plan(machine.topology, n, "compact", threads=config.suite.threads_per_copy)
    rng = random.Random(config.seed)
    specs: list[RunSpec] = []
    for rep in range(config.reps):
        order = list(zip(config.suite.workloads, config.workloads))
        rng.shuffle(order)
        for sw, wl in order:
            specs.extend(wl.spec(cpus=s.affinity, mem_node=s.mem_node, timeout=config.timeout,
                                 label=f"{sw.name}/n={n}", params={"workload": sw.name, "copy": s.copy, "round": rep})
                         for s in slots)
    return specs


def execute(config: ScoreConfig, session, machine: Machine) -> ScoreResult:
    """Run each point's copies together (stored as they finish), then analyse."""
    specs = plan(config, machine)
    runs = run_copies(specs, session, "repetition", config.reps)
    host = host_of(machine)
    slots = placement.plan(machine.topology, copies_for(config, machine), "compact",
                           threads=config.suite.threads_per_copy)
    # Which core each copy ran on: copies on SMT siblings of one core are named as such.
    host["copy_cores"] = [sorted({machine.topology.cpu(c).core for c in s.cpus}) for s in slots]
    return analyse(config, runs, host, len(usable_cpus(machine.topology)))


def host_of(machine: Machine) -> dict[str, Any]:
    """The host as a score report names it (hostname, CPU model, CPUs, sockets, SMT)."""
    md, topo = machine.metadata, machine.topology
    cores = len(topo.cores)
    cpus = len(topo.cpu_ids)
    return {k: v for k, v in {
        "hostname": md.get("hostname"), "cpu_model": md.get("cpu_model"), "cpus": cpus,
        "sockets": len(topo.sockets) or None,
        "threads_per_core": (cpus // cores) if cores else None,
        "software": {"kernel_version": (md.get("kernel") or {}).get("release")},
    }.items() if v is not None}


def analyse(config: ScoreConfig, runs: Sequence[Any], host: dict[str, Any], cpus: int | None) -> ScoreResult:
    """Node throughput per workload and repetition, copies' own rates, energy; the score. Pure."""
    by: dict[tuple[str, int], list[Any]] = {}
    for r in runs:
        by.setdefault((r.params["workload"], int(r.params["round"])), []).append(r)
    failures: dict[str, int] = {}
    watts: list[float] = []
    measured: list[Any] = []
    wls = []
    for sw, wl in zip(config.suite.workloads, config.workloads):
        work, summed = work_metric(wl), summed_metric(wl)
        metric = summed or (f"{work}_per_s" if work else "copies_per_s")
        values, copy_values = [], []
        for rep in range(config.reps):
            point = sorted(by.get((sw.name, rep), []), key=lambda r: r.params["copy"])
            if not point:
                continue
            results = [r.result for r in point]
            tp, why = point_throughput(results, work, summed)
            if tp is None:
                failures[why or "failed"] = failures.get(why or "failed", 0) + 1
                continue
            values.append({metric: tp})
            own = wl.primary_metric
            copy_values.append([float(x.metrics[own]) for x in results if own in x.metrics])
            e = point_energy(results, work)
            if e is not None:
                watts.append(e[0])
                measured.extend(x for x in results if x.energy)
        wls.append(WorkloadScore(name=sw.name, references={metric: sw.reference}, weight=sw.weight, values=values,
                                 copies=len(by.get((sw.name, 0), [])) or None,
                                 threads_per_copy=config.suite.threads_per_copy, copy_values=copy_values,
                                 unit=unit_of(wl)))
    result = ScoreResult(suite=config.suite.name, source="measured", scaling=config.suite.scaling,
                         reference_machine=config.suite.reference_machine, workloads=wls, host=host, cores=cpus,
                         failures=failures, runs=len(runs))
    if watts:
        result.watts = statistics.median(watts)
        result.watts_source = f"measured: {source_of(measured)}"
    elif config.suite.tdp_w and host.get("sockets"):
        result.watts = POWER_FACTOR * config.suite.tdp_w * host["sockets"]
        n = host["sockets"]
        result.watts_source = f"modelled: {POWER_FACTOR} x TDP {config.suite.tdp_w:g} W x {n} socket{'s' * (n != 1)}"
    else:
        result.watts_source = "cannot tell: no energy source here and no tdp_w in the suite (docs/score.md)"
    if failures:
        result.notes.append(f"{sum(failures.values())} repetitions failed and are left out: "
                            + ", ".join(f"{k} x{v}" for k, v in failures.items()))
    if config.suite.source == "builtin":
        result.notes.append(f"references of the built-in suite '{config.suite.name}' were measured on "
                            f"{config.suite.reference_machine}")
    return analyse_workloads(result)
