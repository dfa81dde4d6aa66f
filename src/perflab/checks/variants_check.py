"""The variants verdict on simulated campaigns: a planted 3 % speed-up is found, a null one is not.

Each campaign is the study's own plan run through the MockExecutor with modelled noise: run
times log-normal (sigma 2 %) on a machine whose speed drifts slowly (a 2 % sine over the
campaign), three variants against a baseline. Null: no variant differs; a false positive is a
campaign whose verdict calls any variant faster or slower. Planted: one variant is 3 % faster;
detected when the verdict names it the fastest. ``bench/verdicts.py`` prints the line.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace

from perflab.kernels.variants import BuildTarget, Variant
from perflab.measure.executor import MockExecutor
from perflab.model import RunResult, RunSpec, Workload
from perflab.studies.variants import VariantsConfig, analyse, plan

SIGMA = 0.02
DRIFT = 0.02
PLANTED = 1.03


def sim_config(rounds: int | None = None, seed: int = 0) -> VariantsConfig:
    """Three variants and the baseline of a program whose metric is events/s and that prints a checksum."""
    wl = Workload(name="sim", argv=("{exe}",), primary_metric="events_per_s", checksum_metric="checksum")
    variants = (Variant("base", ("-O2", "-m64")), Variant("O3", ("-O3",)), Variant("lto", ("-O2", "-flto")),
                Variant("native", ("-O2", "-march=native")))
    kw = {"rounds": rounds} if rounds is not None else {}
    return VariantsConfig(BuildTarget("sim"), wl, variants, warmup=0, seed=seed, **kw)


class NoisyMachine:
    """A MockExecutor model: seconds = base / speed-up x drift x log-normal noise."""

    def __init__(self, speedups: dict[str, float], rng: random.Random, n_runs: int) -> None:
        self.speedups, self.rng, self.n_runs, self.i = speedups, rng, n_runs, 0

    def __call__(self, spec: RunSpec) -> RunResult:
        drift = 1 + DRIFT * math.sin(2 * math.pi * self.i / max(1, self.n_runs))
        self.i += 1
        secs = drift * self.rng.lognormvariate(0.0, SIGMA) / self.speedups.get(spec.params["variant"], 1.0)
        return RunResult(wall_ns=int(secs * 1e9), user_s=secs, sys_s=0.0, maxrss_kb=100_000, minflt=100,
                         majflt=0, nvcsw=0, nivcsw=0, exit_code=0,
                         metrics={"events_per_s": 100.0 / secs, "checksum": 42.0})


def simulate(config: VariantsConfig, speedups: dict[str, float], rng: random.Random):
    """One campaign: the plan run through the MockExecutor, then the study's analysis."""
    specs = [s for s in plan(config) if s.params["round"] >= 0]
    ex = MockExecutor(NoisyMachine(speedups, rng, len(specs)))
    runs = [(dict(s.params), ex.run(replace(s, argv=("true",)))) for s in specs]
    return analyse(config, runs)


def verdict_check(runs: int = 200, seed: int = 0, rounds: int | None = None, echo: bool = True) -> tuple[float, float]:
    """(false-positive rate, detection rate) over ``runs`` null and ``runs`` planted campaigns."""
    rng = random.Random(seed)
    fp = det = 0
    for i in range(runs):
        null = simulate(sim_config(rounds, seed=i), {}, rng)
        fp += any(c.significant for o in null.variants for q, c in o.comparisons.items() if q == null.primary)
        planted = simulate(sim_config(rounds, seed=i), {"lto": PLANTED}, rng)
        det += planted.fastest == "lto"
    fp_rate, det_rate = fp / runs, det / runs
    if echo:
        print(f"verdict-check: variants false_positive={fp_rate:.3f} detection={det_rate:.3f} runs={runs}")
    return fp_rate, det_rate


def verdict_lines(runs: int = 200, seed: int = 0) -> list[str]:
    """The check's line for bench/verdicts.py, at the study's default settings."""
    fp, det = verdict_check(runs, seed=seed, echo=False)
    return [f"verdict-check: variants false_positive={fp:.3f} detection={det:.3f} runs={runs}"]


if __name__ == "__main__":
    print("\n".join(verdict_lines()))
