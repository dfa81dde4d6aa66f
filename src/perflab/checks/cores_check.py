"""Does `perflab cores` find a planted slow CPU and stay quiet on transient interference?

Simulated campaigns through the MockExecutor at the study's default settings (sequential mode),
16 CPUs (8 cores x 2 SMT threads), per-CPU log-normal noise (each CPU its own SD, 1-3 %) and a
slow drift of the machine (+-3 % over the campaign):
- cores-persistent: one CPU 5 % slower in every run. detection = the share of campaigns that
  call that CPU slow; false_positive = the share of campaigns without any planted effect (same
  noise) that call any CPU slow.
- cores-transient: one CPU 30 % slower in 3 consecutive rounds of 20 (rounds fixed at 20).
  false_positive = the share of campaigns that call any CPU slow; detection = the share that
  report that CPU as disturbed in those rounds.
Prints `verdict-check: NAME false_positive=X detection=Y runs=N`; goal: false_positive <= 0.05,
detection >= 0.90. ``checks(runs)`` is what bench/verdicts.py and the tests call.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace

from perflab.measure.executor import MockExecutor
from perflab.model import Workload
from perflab.platform.machine import Machine
from perflab.platform.topology import Core, Cpu, Node, Topology
from perflab.store import open_store
from perflab.studies import cores, run_study


def smt_box(n_cores: int = 8) -> Topology:
    """One socket, n_cores cores x 2 threads: CPU k and k + n_cores are siblings."""
    cpus = tuple(Cpu(c, c % n_cores, 0, 0, (c % n_cores, c % n_cores + n_cores)) for c in range(2 * n_cores))
    core_list = tuple(Core(k, 0, 0, (k, k + n_cores)) for k in range(n_cores))
    return Topology(cpus, core_list, (0,), (Node(0, tuple(range(2 * n_cores))),))


def campaign(seed: int, slow: dict[int, float], burst: tuple[int, int, float] | None = None,
             rounds: int | None = None) -> cores.CoresResult:
    """One simulated scan: slow = {cpu: factor}; burst = (cpu, first round, size) for 3 rounds."""
    rng = random.Random(seed)
    topo = smt_box(8)
    sd = {c.id: rng.uniform(0.01, 0.03) for c in topo.cpus}
    clock = [0]

    def model(spec) -> float:
        cpu, rnd = spec.cpus[0], spec.params["round"]
        clock[0] += 1
        x = (1 + 0.03 * math.sin(clock[0] / 100)) * rng.lognormvariate(0, sd[cpu]) * slow.get(cpu, 1.0)
        if burst and cpu == burst[0] and burst[1] <= rnd < burst[1] + 3:
            x *= 1 + burst[2]
        return 0.05 * x

    config = cores.CoresConfig(Workload("sim", ("sim",)), seed=seed)
    if rounds is not None:
        config = replace(config, rounds=rounds, min_rounds=rounds)
    with open_store(":memory:") as store:
        return run_study(cores, config, store, MockExecutor(model), machine=Machine(topo, {"loadavg": [0.0]}))


def checks(runs: int = 200, seed: int = 0) -> list[tuple[str, float, float, int]]:
    """[(name, false_positive, detection, runs)] for cores-persistent and cores-transient."""
    rng = random.Random(seed)
    fp = det = 0
    for i in range(runs):
        target = rng.randrange(16)
        res = campaign(rng.randrange(1 << 30), {target: 1.05})
        det += any(r.cpu == target and r.verdict == "slow" for r in res.cpus)
        res = campaign(rng.randrange(1 << 30), {})
        fp += bool(res.slow)
    out = [("cores-persistent", fp / runs, det / runs, runs)]
    fp = det = 0
    for i in range(runs):
        target, start = rng.randrange(16), rng.randrange(0, 18)
        res = campaign(rng.randrange(1 << 30), {}, burst=(target, start, 0.3), rounds=20)
        fp += bool(res.slow)
        det += any(x.cpu == target and set(range(start, start + 3)) <= set(x.rounds) for x in res.disturbances)
    out.append(("cores-transient", fp / runs, det / runs, runs))
    return out


def verdict_lines(runs: int = 200, seed: int = 0) -> list[str]:
    """The two lines bench/verdicts.py prints."""
    return [f"verdict-check: {name} false_positive={fp:.3f} detection={det:.3f} runs={n}"
            for name, fp, det, n in checks(runs, seed)]
