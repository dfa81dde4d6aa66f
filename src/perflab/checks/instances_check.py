"""Does the fork-master verdict find a planted NUMA gain and stay quiet without one?

Simulated campaigns of the instances study at its default settings, through the MockExecutor on a
2-node fixture topology (2 sockets x 4 cores, one NUMA node each), with modelled noise: a
log-normal factor per concurrent point (the machine's state, shared by its copies), a small
log-normal factor per process, a slow sinusoidal drift of the machine over the campaign, and
transient bursts of interference (1 point in 10 runs 25 % slower). Both fork modes do the same
events with the same workers; the planted effect makes NUMA-bound masters process events 8 %
faster. ``verdict_check`` returns the false-positive rate (null: any verdict of a difference)
and the detection rate (planted: a verdict of a gain), and prints the line bench/verdicts.py
collects.
"""

from __future__ import annotations

import math
import random

from perflab.measure.executor import MockExecutor
from perflab.model import MetricPattern, RunResult, RunSpec, Workload
from perflab.platform.machine import Machine
from perflab.platform.topology import Core, Cpu, Node, Topology
from perflab.studies import instances
from perflab.studies.instances_result import ForkVerdict

PLANTED_GAIN = 0.08
EVENTS = 200
EVENT_S = 0.01
LOAD_S = 0.2


def two_node_topology(cores_per_node: int = 4) -> Topology:
    """2 sockets = 2 NUMA nodes, ``cores_per_node`` cores each, no SMT."""
    k = cores_per_node
    cpus = tuple(Cpu(c, c, c // k, c // k, (c,)) for c in range(2 * k))
    cores = tuple(Core(c, c // k, c // k, (c,)) for c in range(2 * k))
    nodes = (Node(0, tuple(range(k))), Node(1, tuple(range(k, 2 * k))))
    return Topology(cpus, cores, (0, 1), nodes)


def sim_workload() -> Workload:
    return Workload(
        "sim", ("sim", "--events", str(EVENTS)),
        metrics=(MetricPattern(r"events: (?P<events>\d+)"), MetricPattern(r"events/s: (?P<events_per_s>[\d.]+)")),
        primary_metric="events_per_s", fork_arg=("--fork", "{n}", "--first", "{first}", "--events", "{events}"),
    )


class _Memory:
    """A session that keeps nothing: the check needs the study's decisions, not a store."""

    def __init__(self, executor: MockExecutor) -> None:
        self.executor = executor

    def run_concurrent(self, specs, rep: int = 0, together: bool = True):
        return self.executor.run_concurrent(specs, together=together)

    def say(self, message: str) -> None:
        pass


def _arg(argv: tuple[str, ...], name: str, default: int) -> int:
    found = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == name]
    return int(found[-1]) if found else default


def _executor(gain: float, rng: random.Random, ncpu: int) -> MockExecutor:
    common: dict[tuple, float] = {}
    ex = MockExecutor()

    def model(spec: RunSpec) -> RunResult:
        key = (spec.params["round"], spec.label)
        if key not in common:
            drift = 1 + 0.05 * math.sin(ex.clock_ns / 1e9 / 30)
            burst = 1.25 if rng.random() < 0.1 else 1.0
            common[key] = rng.lognormvariate(0, 0.03) * drift * burst
        events = _arg(spec.argv, "--events", EVENTS)
        workers = _arg(spec.argv, "--fork", 1)
        n = int(spec.params["n"])
        per_event = EVENT_S * max(1.0, n / ncpu)
        if spec.mem_node is not None and "mode" in spec.params:
            per_event /= 1 + gain
        wall = (LOAD_S + events / workers * per_event) * common[key] * rng.lognormvariate(0, 0.005)
        wall_ns = round(wall * 1e9)
        return RunResult(wall_ns=wall_ns, user_s=wall, sys_s=0.0, maxrss_kb=1024, minflt=0, majflt=0,
                         nvcsw=0, nivcsw=0, exit_code=0, start_ns=ex.clock_ns, end_ns=ex.clock_ns + wall_ns,
                         metrics={"events": float(events), "events_per_s": events / wall})

    ex.model = model
    return ex


def simulate(gain: float, seed: int, config: instances.InstancesConfig | None = None) -> ForkVerdict:
    """One simulated campaign at the default settings (plus --fork-master); its fork verdict."""
    topology = two_node_topology()
    machine = Machine(topology=topology, metadata={"hostname": "sim"})
    cfg = config or instances.InstancesConfig(sim_workload(), fork_master=True, seed=seed)
    rng = random.Random(seed * 7919 + 1)
    ex = _executor(gain, rng, len(topology.cpus))
    result = instances.execute(cfg, _Memory(ex), machine)
    assert result.fork_verdict is not None
    return result.fork_verdict


def verdict_check(runs: int = 200, seed: int = 0, gain: float = PLANTED_GAIN) -> tuple[float, float]:
    """(false-positive rate, detection rate) over ``runs`` simulated campaigns each; prints the line."""
    false_pos = sum(simulate(0.0, seed + i).significant for i in range(runs))
    detected = 0
    for i in range(runs):
        v = simulate(gain, seed + runs + i)
        detected += bool(v.significant and v.gain is not None and v.gain > 1)
    fp, det = false_pos / runs, detected / runs
    print(f"verdict-check: instances-fork false_positive={fp:.3f} detection={det:.3f} runs={runs}", flush=True)
    return fp, det
