"""Does the front-end verdict find planted effects and stay quiet on null cases? (issue 13)

Each simulated campaign runs the study's own plan through the MockExecutor and its own
analyse. The model machine: ns per dispatch flat up to 512 KiB then +2 ns per doubling, with
log-normal noise per run (sigma 5 %), a slow drift over the campaign (+4 % end to end) and
transient bursts (2 % of runs 30 % slower). ``frontend-null``: both page modes alike, so any
"2 MiB pages help" is a false positive. ``frontend-itlb``: 4 KiB pages 10 % slower above
512 KiB, as seed 001 saw beyond 128 iTLB entries x 4 KiB; the verdict must find it.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace

from perflab.measure.executor import MockExecutor
from perflab.model import RunResult, RunSpec
from perflab.platform.machine import Machine
from perflab.platform.topology import Topology
from perflab.studies.frontend import FrontendConfig, analyse, plan

KNEE_BYTES = 512 << 10
PENALTY = 0.10  # planted 4 KiB-page penalty above KNEE_BYTES
SIGMA = 0.05  # log-normal noise per run
DRIFT = 0.04  # slow drift from the first run to the last
BURST_P, BURST = 0.02, 0.30  # share of runs hit by interference, and how much slower


def model(planted: bool, n_runs: int, rng: random.Random):
    """A MockExecutor model: RunSpec -> RunResult with ns_per_iter as the generator prints it."""
    state = {"i": 0}

    def run(spec: RunSpec) -> RunResult:
        b, mode = spec.params["bytes"], spec.params["mode"]
        ns = 3.0 + (2.0 * math.log2(b / KNEE_BYTES) if b > KNEE_BYTES else 0.0)
        if planted and mode == "4k" and b > KNEE_BYTES:
            ns *= 1 + PENALTY
        ns *= math.exp(rng.gauss(0.0, SIGMA)) * (1 + DRIFT * state["i"] / max(1, n_runs))
        if rng.random() < BURST_P:
            ns *= 1 + BURST
        state["i"] += 1
        wall = int(ns * spec.params.get("iters", 2_000_000))
        return RunResult(wall_ns=wall, user_s=wall / 1e9, sys_s=0.0, maxrss_kb=1024, minflt=100, majflt=0,
                         nvcsw=0, nivcsw=0, exit_code=0,
                         metrics={"ns_per_iter": ns, "seconds": wall / 1e9,
                                  "huge_text_kb": 4096.0 if mode == "2m" else 0.0})

    return run


def simulate(config: FrontendConfig, planted: bool, seed: int) -> bool:
    """One simulated campaign: does its verdict say 2 MiB pages help?"""
    machine = Machine(topology=Topology(cpus=(), cores=(), sockets=(), nodes=()), metadata={})
    specs = plan(config, machine)
    ex = MockExecutor(model=model(planted, len(specs), random.Random(seed)))
    runs = [(dict(s.params), ex.run(s)) for s in specs]
    return any(r.helps for r in analyse(config, runs).ratios)


def verdict_check(runs: int = 200, config: FrontendConfig | None = None, seed: int = 0) -> dict[str, float]:
    """Share of null campaigns called "helps" and of planted ones found, at the given settings."""
    config = replace(config or FrontendConfig(), perf_span=False, counters=False)
    false_pos = sum(simulate(config, False, seed + i) for i in range(runs))
    found = sum(simulate(config, True, seed + runs + i) for i in range(runs))
    return {"false_positive": false_pos / runs, "detection": found / runs, "runs": runs}


def verdict_lines(runs: int = 200, config: FrontendConfig | None = None) -> list[str]:
    """The two lines bench/verdicts.py prints."""
    r = verdict_check(runs, config)
    return [f"verdict-check: frontend-null false_positive={r['false_positive']:.2f} detection=- runs={runs}",
            f"verdict-check: frontend-itlb false_positive=- detection={r['detection']:.2f} runs={runs}"]


if __name__ == "__main__":
    print("\n".join(verdict_lines()))
