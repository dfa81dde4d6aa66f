"""The variants verdict on simulated campaigns, under every noise model of checks/noise.py.

Each campaign is the study's own plan run through the MockExecutor: three variants and a baseline,
run times the model's factors (run-to-run noise, a level, two speeds, a tail, drift; a burst in
some rounds slows the round's first run, a random variant by the shuffle). Null: no variant
differs; a false positive is a campaign whose verdict calls any variant faster or slower. Planted:
one variant is 3 % faster; detected when the verdict names it the fastest. Tie: two variants are
both 3 % faster; a false "fastest" is a campaign that names one of them instead of the tie.
Under two speeds, where a campaign names no fastest variant its output asks for the rounds that
would see 2 % (studies/variants/power.py); ``rates_asked`` is the user who then reruns with them
(``variants[MODEL]-asked``: false positives over both campaigns, detection of the planted 3 %).
``bench/verdicts.py`` prints one line per model.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

from perflab.checks import until
from perflab.checks.noise import MODELS, STUDY_MODELS, StudyModel
from perflab.kernels.variants import BuildTarget, Variant
from perflab.measure.executor import MockExecutor
from perflab.model import RunResult, RunSpec, Workload
from perflab.studies.variants.study import VariantsConfig, analyse, measure, plan

PLANTED = 1.03
ASKED_MODELS = ("two-speed", "vcpu-states")  # the models at two speeds, where the output asks for rounds


def sim_config(rounds: int | None = None, seed: int = 0) -> VariantsConfig:
    """Three variants and the baseline of a program whose metric is events/s and that prints a checksum."""
    wl = Workload(name="sim", argv=("{exe}",), primary_metric="events_per_s", checksum_metric="checksum")
    variants = (Variant("base", ("-O2", "-m64")), Variant("O3", ("-O3",)), Variant("lto", ("-O2", "-flto")),
                Variant("native", ("-O2", "-march=native")))
    kw: dict[str, Any] = {"rounds": rounds} if rounds is not None else {}
    return VariantsConfig(BuildTarget("sim"), wl, variants, warmup=0, seed=seed, **kw)


class NoisyMachine:
    """A MockExecutor model: seconds = 1 / speed-up x the noise model's factor, x a burst on the
    first run of a round the burst hits."""

    def __init__(self, speedups: dict[str, float], rng: random.Random, n_runs: int = 0,
                 model: StudyModel = MODELS["quiet"]) -> None:
        self.speedups, self.campaign = speedups, model.campaign(rng)
        self.round: int | None = None

    def __call__(self, spec: RunSpec) -> RunResult:
        burst = 1.0
        if spec.params["round"] != self.round:
            self.round = spec.params["round"]
            burst = self.campaign.burst_hits()
        secs = burst * self.campaign.factor() / self.speedups.get(spec.params["variant"], 1.0)
        return RunResult(wall_ns=int(secs * 1e9), user_s=secs, sys_s=0.0, maxrss_kb=100_000, minflt=100,
                         majflt=0, nvcsw=0, nivcsw=0, exit_code=0,
                         metrics={"events_per_s": 100.0 / secs, "checksum": 42.0})


def simulate(config: VariantsConfig, speedups: dict[str, float], rng: random.Random,
             model: StudyModel = MODELS["quiet"]):
    """One campaign: the plan run through the MockExecutor, then the study's analysis."""
    specs = [s for s in plan(config) if s.params["round"] >= 0]
    ex = MockExecutor(NoisyMachine(speedups, rng, len(specs), model))
    runs = [(dict(s.params), ex.run(replace(s, argv=("true",)))) for s in specs]
    return analyse(config, runs)


def rates(runs: int = 200, seed: int = 0, rounds: int | None = None,
          model: StudyModel = MODELS["quiet"]) -> tuple[float, float, float]:
    """(false positive, detection, false fastest among two equal ones) over ``runs`` campaigns each."""
    rng = random.Random(seed)
    fp = det = split = 0
    for i in range(runs):
        null = simulate(sim_config(rounds, seed=i), {}, rng, model)
        fp += any(c.significant for o in null.variants for q, c in o.comparisons.items() if q == null.primary)
        planted = simulate(sim_config(rounds, seed=i), {"lto": PLANTED}, rng, model)
        det += planted.fastest == "lto"
        tie = simulate(sim_config(rounds, seed=i), {"lto": PLANTED, "O3": PLANTED}, rng, model)
        split += tie.fastest is not None
    return fp / runs, det / runs, split / runs


def _found_asked(config: VariantsConfig, speedups: dict[str, float], rng: random.Random, model: StudyModel,
                 seed: int) -> tuple[bool, bool]:
    """(any variant called different, 'lto' named the fastest) of a campaign at the default rounds
    and, where it named no fastest and asked for rounds (--rounds N), of a fresh one at those."""
    first = simulate(sim_config(seed=seed), speedups, rng, model)
    called = any(c.significant for o in first.variants for q, c in o.comparisons.items() if q == first.primary)
    if first.fastest is not None or first.rounds_needed is None or (called and not speedups):
        return called, first.fastest == "lto"
    again = simulate(sim_config(first.rounds_needed, seed=seed), speedups, rng, model)
    called |= any(c.significant for o in again.variants for q, c in o.comparisons.items() if q == again.primary)
    return called, again.fastest == "lto"


def rates_asked(runs: int, seed: int = 0, model: StudyModel = MODELS["two-speed"]) -> tuple[float, float]:
    """The user who reruns with the rounds the output asks for where it named no fastest variant:
    (false positives on the null over both campaigns, detection of the planted 3 %)."""
    rng = random.Random(f"asked-{seed}")
    fp = sum(_found_asked(sim_config(), {}, rng, model, seed + i)[0] for i in range(runs))
    det = sum(_found_asked(sim_config(), {"lto": PLANTED}, rng, model, seed + i)[1] for i in range(runs))
    return fp / runs, det / runs


def verdict_check(runs: int = 200, seed: int = 0, rounds: int | None = None, echo: bool = True,
                  model: str = "quiet") -> tuple[float, float]:
    """(false-positive rate, detection rate) under one noise model."""
    fp, det, split = rates(runs, seed, rounds, STUDY_MODELS[model])
    if echo:
        print(_line(model, fp, det, split, runs))
    return fp, det


def _line(model: str, fp: float, det: float, split: float, runs: int) -> str:
    return (f"verdict-check: variants[{model}] false_positive={fp:.3f} detection={det:.3f} "
            f"false_fastest_in_tie={split:.3f} runs={runs}")


def verdict_lines(runs: int = 200, seed: int = 0) -> list[str]:
    """One line per noise model for bench/verdicts.py, at the study's default rounds; then, for
    the models at two speeds, the user who reruns with the rounds the output asks for (half the
    trials: each rerun is a campaign of 40-80 rounds)."""
    lines = [_line(name, *rates(runs, seed, None, model), runs) for name, model in STUDY_MODELS.items()]
    for name in ASKED_MODELS:
        few = max(1, runs // 2)
        fp, det = rates_asked(few, seed, STUDY_MODELS[name])
        lines.append(f"verdict-check: variants[{name}]-asked false_positive={fp:.3f} detection={det:.3f} runs={few}")
    return lines


if __name__ == "__main__":
    print("\n".join(verdict_lines()))


def until_decided(model: StudyModel, speedups: dict[str, float], seed: int, max_runs: int | None = None):
    """One `perflab variants --until-decided` campaign: the study's own rounds and stop rule
    (study.measure) through the MockExecutor, at its default budget and --min-effect."""
    rng = random.Random(f"{model.name}-{sorted(speedups.items())}-{seed}-until-decided")
    config = replace(sim_config(seed=seed), until_decided=True, max_runs=max_runs)
    specs = [s for s in plan(config) if s.params["round"] >= 0]
    ex = MockExecutor(NoisyMachine(speedups, rng, len(specs), model))
    runs, stopped = measure(config, specs, lambda s: ex.run(replace(s, argv=("true",))), ex.now_ns)
    return analyse(config, runs, stopped_by=stopped)


def _called(result) -> bool:
    """Any build called faster or slower than the baseline on the primary quantity."""
    return any(c.significant for o in result.variants for q, c in o.comparisons.items() if q == result.primary)


def rates_until_decided(model: str, trials: int, seed: int = 0) -> dict[str, float]:
    """--until-decided under ``model``: false positives over all looks (any build called faster or
    slower, equal builds), detection of the planted 3 % (named the fastest), the share of null
    campaigns that ruled out every build at the margin and of planted ones left undecided, and
    the median and 90th percentile of the rounds taken (null and planted together)."""
    m = STUDY_MODELS[model]
    nulls = [until_decided(m, {}, seed + i) for i in range(trials)]
    found = [until_decided(m, {"lto": PLANTED}, seed + i) for i in range(trials)]
    return until.rates(nulls, found, [r.rounds for r in nulls + found], _called, lambda r: r.fastest == "lto",
                       lambda r: all(c.decision == "within" for o in r.variants
                                     for q, c in o.comparisons.items() if q == r.primary))


def until_decided_lines(runs: int = 40, seed: int = 0) -> list[str]:
    """The --until-decided rows: every noise model of the variants harness."""
    lines = []
    for name in STUDY_MODELS:
        lines.append(until.line(f"variants-until-decided-{name}", rates_until_decided(name, runs, seed), runs))
    return lines
