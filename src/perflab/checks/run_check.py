"""Does `perflab run` tell two commands 2 % apart, and stay quiet on two equal ones?

Two commands of about 0.1 s through the MockExecutor at `perflab run`'s default settings
(hyperfine's rule: runs enough to fill the time budget, at least 10 each), interleaved as the
study runs them, with log-normal run-to-run noise (2 %), a slow drift of the machine (+-1 %) and
bursts of interference (1 run in 20 takes 30 % longer). A false positive is a verdict that the
two equal commands differ; a detection is a verdict that the planted slower one is slower.

The same with `--runs 1` and `--runs 3`, equal commands only: there no interval can reach 95 %.
Before perflab refused to call a difference on them, these two equal commands were called
different in 72 % of 200 trials with one run each (the slower single run was "slower" whenever it
was 1 % slower) and in 12.5 % with three each (a 90 % interval read as a 95 % one).
"""

from __future__ import annotations

import math
import random

from perflab.measure.executor import MockExecutor
from perflab.model import RunSpec
from perflab.platform.machine import Machine
from perflab.platform.topology import Topology
from perflab.store import open_store
from perflab.studies import run, run_study

BASE_S = 0.1
PLANTED = 0.02


def _executor(slower: float, rng: random.Random) -> MockExecutor:
    ex = MockExecutor()

    def model(spec: RunSpec) -> float:
        drift = 1 + 0.01 * math.sin(ex.clock_ns / 1e9 / 2)
        burst = 1.3 if rng.random() < 0.05 else 1.0
        factor = 1 + slower if spec.label == "b" else 1.0
        return BASE_S * factor * drift * burst * rng.lognormvariate(0, 0.02)

    ex.model = model
    return ex


def trial(slower: float, seed: int, runs: int | None = None) -> tuple[bool, bool]:
    """(the verdict says the two differ, it says b is the slower one); ``runs``: --runs N."""
    rng = random.Random(seed)
    cfg = run.RunConfig(commands=(run.Command("a", ("a",)), run.Command("b", ("b",))), seed=seed, runs=runs)
    machine = Machine(Topology((), (), (), ()), {"hostname": "sim"})
    with open_store(":memory:") as store:
        result = run_study(run, cfg, store, _executor(slower, rng), machine=machine)
    slow = [b for b in result.benchmarks if b.relative and b.relative.get("significant")]
    return bool(slow), any(b.command == "b" for b in slow)


def verdict_check(runs: int = 200, seed: int = 0) -> tuple[float, float]:
    """(false-positive rate, detection rate); prints the line bench/verdicts.py collects."""
    fp = sum(trial(0.0, seed + i)[0] for i in range(runs)) / runs
    det = sum(trial(PLANTED, seed + runs + i)[1] for i in range(runs)) / runs
    print(f"verdict-check: run-compare false_positive={fp:.3f} detection={det:.3f} runs={runs}", flush=True)
    for n in (1, 3):
        few = sum(trial(0.0, seed + 2 * runs + i, runs=n)[0] for i in range(runs)) / runs
        print(f"verdict-check: run-compare-{n}-runs false_positive={few:.3f} runs={runs}", flush=True)
    return fp, det
