"""Does `perflab compare` find two instances campaigns 5 % apart, and stay quiet on equal ones?

Each trial makes two campaigns of the instances study at its default settings through the
MockExecutor on a 4-CPU machine (log-normal noise per concurrent point and per copy, a slow drift,
bursts of interference in 1 point of 10) and compares them as `perflab compare A B` does. Null:
both campaigns from the same model. Planted: every copy of B takes 5 % longer. A false positive is
any significant row in a null trial; a detection is a planted trial with a significant row that
says B is slower and none that says it is faster.
"""

from __future__ import annotations

import math
import random

from perflab.measure.executor import MockExecutor
from perflab.model import MetricPattern, RunResult, RunSpec, Workload
from perflab.platform.machine import Machine
from perflab.platform.topology import Core, Cpu, Node, Topology
from perflab.store import open_store
from perflab.studies import instances, run_study
from perflab.studies.compare import compare_measurements

PLANTED = 0.05
MEASURES = ("wall_s", "events_per_s")


def _machine(ncpu: int = 4) -> Machine:
    cpus = tuple(Cpu(c, c, 0, 0, (c,)) for c in range(ncpu))
    cores = tuple(Core(c, 0, 0, (c,)) for c in range(ncpu))
    return Machine(Topology(cpus, cores, (0,), (Node(0, tuple(range(ncpu))),)), {"hostname": "sim"})


def _workload() -> Workload:
    return Workload("sim", ("sim",), metrics=(MetricPattern(r"events/s: (?P<events_per_s>[\d.]+)"),),
                    primary_metric="events_per_s")


def _executor(slower: float, rng: random.Random, ncpu: int) -> MockExecutor:
    ex = MockExecutor()
    shared: dict[tuple, float] = {}

    def model(spec: RunSpec) -> RunResult:
        key = (spec.params.get("round"), spec.params.get("policy"), spec.params.get("n"))
        if key not in shared:
            drift = 1 + 0.02 * math.sin(ex.clock_ns / 1e9 / 20)
            burst = 1.2 if rng.random() < 0.1 else 1.0
            shared[key] = rng.lognormvariate(0, 0.02) * drift * burst
        n = int(spec.params.get("n", 1))
        wall = 1.0 * max(1.0, n / ncpu) * (1 + slower) * shared[key] * rng.lognormvariate(0, 0.005)
        wall_ns = round(wall * 1e9)
        return RunResult(wall_ns=wall_ns, user_s=wall, sys_s=0.0, maxrss_kb=1024, minflt=0, majflt=0, nvcsw=0,
                         nivcsw=0, exit_code=0, start_ns=ex.clock_ns, end_ns=ex.clock_ns + wall_ns,
                         metrics={"events_per_s": 100.0 / wall})

    ex.model = model
    return ex


def trial(slower_b: float, seed: int) -> tuple[bool, bool]:
    """(any significant row, significant rows all say B is slower) for one pair of campaigns."""
    machine = _machine()
    rng = random.Random(seed)
    with open_store(":memory:") as store:
        ids = []
        for slower in (0.0, slower_b):
            cfg = instances.InstancesConfig(_workload(), seed=rng.randrange(1 << 30))
            ids.append(run_study(instances, cfg, store, _executor(slower, rng, 4), machine=machine).campaign_id)
        ma, mb = store.measurements(ids[0]), store.measurements(ids[1])
        rows, _, _, _ = compare_measurements("instances", ma, mb, measures=MEASURES,
                                             config=store.campaign(ids[0]).config)
    sig = [r for r in rows if r.significant]
    slower = all(r.better == "A" for r in sig)
    return bool(sig), bool(sig) and slower


def verdict_check(runs: int = 200, seed: int = 0) -> tuple[float, float]:
    """(false-positive rate, detection rate) over ``runs`` trials each; prints the line."""
    fp = sum(trial(0.0, seed + i)[0] for i in range(runs)) / runs
    det = sum(trial(PLANTED, seed + runs + i)[1] for i in range(runs)) / runs
    print(f"verdict-check: compare false_positive={fp:.3f} detection={det:.3f} runs={runs}", flush=True)
    return fp, det
