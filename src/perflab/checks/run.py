"""Does `perflab run` call a command better or worse than the reference only when it is?

k commands (5 and 8) of about 0.1 s each through the MockExecutor at `perflab run`'s default
settings (hyperfine's rule: enough runs to fill 3 s, about 30 each), interleaved and shuffled per
round as the study runs them. Every run's time is multiplied by one campaign of a model of
checks/noise.py (quiet, shift, two-speed, skewed, loaded): the machine's state (its speed, its
drift, its tail) is shared by whichever command runs next, and under 'loaded' a burst of load hits
a run with the model's probability. Null: k equal commands; a false positive is any command called
slower or faster than the reference (the first). Planted: the second command 2 % slower; a
detection is that command called slower.

The rule before (each command against the sample-fastest: the reference chosen by the data) is
``against_fastest``: at 5 and 8 equal commands it called one "slower" in 7.2 % and 9.8 % of
trials under a 5 % label (tests/test_run_reference.py shows this harness catches it).

Under two speeds each comparison is made within the speeds (stats.speeds); where it calls
nothing, the output asks for the runs that would see 1 % (``--runs N``). ``rates_asked`` is the
user who then reruns with them: a fresh campaign of the machine, its verdict taken
(``run-two-speed-K-commands-asked``: false positives over both campaigns, detection of the 2 %).

``trial(slower, seed, runs=...)`` is the two-command check of before (``run-compare``), and
``--runs 1`` / ``--runs 3`` on equal commands, where no interval can reach 95 %: before perflab
refused to call a difference there, equal commands were called different in 72 % of 200 trials
with one run each and 12.5 % with three.
"""

from __future__ import annotations

import math
import random
import re

from perflab.checks import until
from perflab.checks.noise import STUDY_MODELS
from perflab.measure.executor import MockExecutor
from perflab.model import RunSpec
from perflab.platform.machine import Machine
from perflab.platform.topology import Topology
from perflab.stats.shift import ratio_ci
from perflab.store import open_store
from perflab.studies import run_study
from perflab.studies.run import study as run
from perflab.studies.run import compare as run_compare
from perflab.studies.run.result import RunStudyResult

BASE_S = 0.1
PLANTED = 0.02
COMMANDS = (5, 8)
ASKED_SHARE = 4  # the 'asked' rows run 1/4 of the trials: each reruns with hundreds of runs
ASKED_MODELS = ("two-speed", "vcpu-states")  # the models at two speeds, where the output asks for runs
MACHINE = Machine(Topology((), (), (), ()), {"hostname": "sim"})


def _noisy(model: str, slower: float, rng: random.Random) -> MockExecutor:
    """A mock whose run of command 'c1' takes (1 + slower) times the others', times the noise."""
    camp = STUDY_MODELS[model].campaign(rng)
    ex = MockExecutor()

    def seconds(spec: RunSpec) -> float:
        factor = 1 + slower if spec.label == "c1" else 1.0
        return BASE_S * factor * camp.factor() * camp.burst_hits()

    ex.model = seconds
    return ex


def study(model: str, k: int, slower: float, seed: int, runs: int | None = None) -> RunStudyResult:
    """One `perflab run` of k commands c0..c{k-1} (c0 the reference) under ``model``; ``runs``:
    --runs (a fresh campaign of the machine), else hyperfine's rule."""
    rng = random.Random(f"{model}-{k}-{slower}-{seed}" + (f"-{runs}" if runs else ""))
    cfg = run.RunConfig(commands=tuple(run.Command(f"c{i}", (f"c{i}",)) for i in range(k)), seed=seed,
                        runs=runs)
    with open_store(":memory:") as store:
        return run_study(run, cfg, store, _noisy(model, slower, rng), machine=MACHINE)


def called(result: RunStudyResult) -> dict[str, str]:
    """command -> 'slower' or 'faster' for each command the verdict calls different."""
    return {b.command: b.relative["verdict"] for b in result.benchmarks
            if b.relative and b.relative.get("verdict")}


def against_fastest(result: RunStudyResult, alpha: float = 0.05) -> dict[str, str]:
    """The rule before: each command against the sample-fastest by the same interval
    (Bonferroni over k-1) on the same runs; command -> 'slower' where it called one."""
    ok = [b for b in result.benchmarks if b.times]
    fastest = min(ok, key=lambda b: b.summary["median"])  # type: ignore[index]  # ok keeps benchmarks with times, each with its summary
    level = 1 - alpha / (len(ok) - 1)
    out = {}
    for b in ok:
        if b is not fastest:
            ratio, ci = ratio_ci(b.times, fastest.times, level=level)
            if ci.level >= level - 1e-9 and ci.low > 1.0 and ratio >= 1 + run_compare.MIN_EFFECT:
                out[b.command] = "slower"
    return out


def rates(model: str, k: int, trials: int, seed: int = 0) -> tuple[float, float, float]:
    """(false-positive rate on k equal commands, the same of the sample-fastest rule on the same
    runs, detection rate of the planted 2 %)."""
    nulls = [study(model, k, 0.0, seed + i) for i in range(trials)]
    fp = sum(bool(called(r)) for r in nulls) / trials
    before = sum(bool(against_fastest(r)) for r in nulls) / trials
    det = sum(called(study(model, k, PLANTED, seed + i)).get("c1") == "slower"
              for i in range(trials)) / trials
    return fp, before, det


def asked(result: RunStudyResult) -> int | None:
    """The most runs the output asks for (--runs N in a comparison within two speeds), or None."""
    asks = [int(m) for w in result.warnings for m in re.findall(r"\(--runs (\d+)\)", w)]
    return max(asks) if asks else None


def rates_asked(model: str, k: int, trials: int, seed: int = 0) -> tuple[float, float]:
    """The user who reruns with the runs the output asks for where it called nothing: (false
    positives on k equal commands over both campaigns, detection of the planted 2 %)."""
    def outcome(slower: float, i: int) -> dict[str, str]:
        first = study(model, k, slower, seed + i)
        verdicts = called(first)
        n = asked(first)
        if (slower and "c1" in verdicts) or (not slower and verdicts) or n is None:
            return verdicts
        return called(study(model, k, slower, seed + i, runs=n))
    fp = sum(bool(outcome(0.0, i)) for i in range(trials)) / trials
    det = sum(outcome(PLANTED, i).get("c1") == "slower" for i in range(trials)) / trials
    return fp, det


def until_decided(model: str, k: int, slower: float, seed: int) -> RunStudyResult:
    """One `perflab run --until-decided` of k commands under ``model`` at its default budget."""
    rng = random.Random(f"{model}-{k}-{slower}-{seed}-until-decided")
    cfg = run.RunConfig(commands=tuple(run.Command(f"c{i}", (f"c{i}",)) for i in range(k)), seed=seed,
                        until_decided=True)
    with open_store(":memory:") as store:
        return run_study(run, cfg, store, _noisy(model, slower, rng), machine=MACHINE)


def rates_until_decided(model: str, k: int, trials: int, seed: int = 0) -> dict[str, float]:
    """--until-decided on k commands: false positives over all looks (any command called slower
    or faster, equal commands), detection of the planted 2 % (c1 called slower), the share of
    null campaigns that ruled out 1 % ('within') and of planted ones left undecided, and the
    median and 90th percentile of the runs a command took (null and planted together)."""
    nulls = [until_decided(model, k, 0.0, seed + i) for i in range(trials)]
    found = [until_decided(model, k, PLANTED, seed + i) for i in range(trials)]
    others = lambda r: [b.relative for b in r.benchmarks[1:] if b.relative]  # noqa: E731  (a one-line predicate, named)
    return until.rates(nulls, found, [r.benchmarks[0].n + r.benchmarks[0].failed for r in nulls + found], called,
                       lambda r: called(r).get("c1") == "slower",
                       lambda r: all(x.get("decision") == "within" for x in others(r)))


def until_decided_lines(runs: int = 60, seed: int = 0, commands: tuple[int, ...] = (2, 5)) -> list[str]:
    """The --until-decided rows: every noise model, 2 and 5 commands."""
    lines = []
    for k in commands:
        for name in STUDY_MODELS:
            lines.append(until.line(f"run-until-decided-{name}-{k}-commands",
                                    rates_until_decided(name, k, runs, seed), runs))
    return lines


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
    """Two commands a (reference) and b: (the verdict says they differ, it says b is slower)."""
    rng = random.Random(seed)
    cfg = run.RunConfig(commands=(run.Command("a", ("a",)), run.Command("b", ("b",))), seed=seed, runs=runs)
    with open_store(":memory:") as store:
        result = run_study(run, cfg, store, _executor(slower, rng), machine=MACHINE)
    verdicts = called(result)
    return bool(verdicts), verdicts.get("b") == "slower"


def verdict_check(runs: int = 200, seed: int = 0, asked: bool = True) -> list[str]:
    """The lines bench/verdicts.py prints: two commands as before, then 5 and 8 commands under
    every noise model (false_positive on the null, detection of the planted 2 %); ``asked``: the
    rows at the runs the output asks for (hundreds a trial: most of this harness's time)."""
    lines = []
    fp = sum(trial(0.0, seed + i)[0] for i in range(runs)) / runs
    det = sum(trial(PLANTED, seed + runs + i)[1] for i in range(runs)) / runs
    lines.append(f"verdict-check: run-compare false_positive={fp:.3f} detection={det:.3f} runs={runs}")
    for n in (1, 3):
        few = sum(trial(0.0, seed + 2 * runs + i, runs=n)[0] for i in range(runs)) / runs
        lines.append(f"verdict-check: run-compare-{n}-runs false_positive={few:.3f} runs={runs}")
    for name in STUDY_MODELS:
        for k in COMMANDS:
            fp, before, det = rates(name, k, runs, seed)
            lines.append(f"verdict-check: run-{name}-{k}-commands false_positive={fp:.3f} "
                         f"detection={det:.3f} runs={runs} sample_fastest_false_positive={before:.3f}")
    for name in ASKED_MODELS if asked else ():
        for k in COMMANDS:
            # the runs the output asks for are hundreds: a quarter of the trials keeps this row's time
            few = max(1, runs // ASKED_SHARE)
            fp, det = rates_asked(name, k, few, seed)
            lines.append(f"verdict-check: run-{name}-{k}-commands-asked false_positive={fp:.3f} "
                         f"detection={det:.3f} runs={few}")
    return lines
