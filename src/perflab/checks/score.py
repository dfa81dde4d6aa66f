"""Does the suite score's interval cover the truth at its level, and are a bad repetition and a slow
copy named (and nothing named where nothing is wrong)?

Simulated suites through the score study's own analysis (``study.analyse``: the node throughput of
each repetition from its copies' stored results, HEPscore's arithmetic, the interval, the flags):
6 workloads of weight 1 with known true ratios to their references (drawn once per trial between
0.8 and 2.5), 16 copies each, 3 repetitions (HEPscore's), scaling 100. A copy's rate is its
workload's true per-copy rate / (the repetition's factor x its own noise): the repetition's factor
is ``factor()`` of one campaign under a noise model of ``checks.noise`` (drift, two speeds, a tail,
bursts; one campaign per trial), shared by the repetition's copies as one machine state is; each
copy adds log-normal noise of 1 %. The workload's node throughput is the sum of its copies' rates (a
per-copy rate summed, as instances sums one), so the truth is exact: score = 100 x the geometric
mean of the true ratios.

- ``coverage``: how often the score's 95 % interval holds the true score, the machine without
  noise (goal: >= 0.95 where the repetitions' noise is symmetric around it; a one-sided tail
  ("skewed", "loaded": every delay slows) or a slow state ("two-speed") lowers every repetition, and a
  campaign's level shift ("shift") moves all of them alike: no interval from one campaign's
  repetitions can see those). ``coverage_of_mean_speed``: how often it holds the score at the
  machine's mean speed under the model (``machine_level``: the true score x exp(E log factor), the
  level shift left out), what repeating the repetitions converges to.
- ``bad-rep``: one repetition of one workload runs 15 % slow (a background job): detection is that
  repetition named; the null (no planted repetition) counts any repetition named.
- ``slow-copy``: one copy of every workload runs 6 % slower in every repetition (a CPU shared with
  another job): detection is that copy named, in two speeds or as a slow copy; the null counts any
  copy named.

``verdict_lines`` prints one line per check and model for bench/verdicts.py.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from perflab.checks.noise import MODELS, Campaign
from perflab.model import MetricPattern, RunResult, Workload
from perflab.studies.score import study
from perflab.studies.score.suite import Suite, SuiteWorkload

WORKLOADS = 6
COPIES = 16
REPS = 3
COPY_SIGMA = 0.01
BAD_REP = 0.85  # the planted repetition's rate: 15 % slow
SLOW_COPY = 0.94  # the planted copy's rate: 6 % slow
SCALING = 100.0
MODEL_NAMES = ("quiet", "shift", "two-speed", "skewed", "loaded")

_WL = Workload(name="sim", argv=("sim",), metrics=(MetricPattern(r"score: (?P<score>[\d.]+)"),),
               primary_metric="score", higher_is_better=True)


@dataclass
class Run:
    params: dict
    result: RunResult


def _config(ratios_ref: list[float]) -> study.ScoreConfig:
    suite = Suite("sim", tuple(SuiteWorkload(f"w{i}", "sim", ref) for i, ref in enumerate(ratios_ref)),
                  "simulated reference", SCALING, REPS)
    return study.ScoreConfig(suite=suite, workloads=(_WL,) * len(ratios_ref))


def trial(rng: random.Random, model: str, bad_rep: bool = False, slow_copy: bool = False):
    """(result, true score, planted (workload, rep) or None, planted copy or None) of one suite."""
    camp = Campaign(MODELS[model], rng)
    true = [rng.uniform(0.8, 2.5) for _ in range(WORKLOADS)]
    refs = [100.0 * rng.uniform(0.5, 2.0) for _ in range(WORKLOADS)]
    per_copy = [t * ref / COPIES for t, ref in zip(true, refs)]
    planted = (rng.randrange(WORKLOADS), rng.randrange(REPS)) if bad_rep else None
    copy = rng.randrange(COPIES) if slow_copy else None
    runs: list[Run] = []
    for rep in range(REPS):
        for w in rng.sample(range(WORKLOADS), WORKLOADS):  # the study's shuffled order per repetition
            f = camp.factor()
            burst = camp.burst_hits()  # a burst of background load takes one CPU: one copy
            hit = rng.randrange(COPIES)
            for c in range(COPIES):
                rate = per_copy[w] / (f * rng.lognormvariate(0.0, COPY_SIGMA) * (burst if c == hit else 1.0))
                if planted == (w, rep):
                    rate *= BAD_REP
                if copy == c:
                    rate *= SLOW_COPY
                res = RunResult(wall_ns=10**9, user_s=1.0, sys_s=0.0, maxrss_kb=0, minflt=0, majflt=0, nvcsw=0,
                                nivcsw=0, exit_code=0, start_ns=0, end_ns=10**9, metrics={"score": rate})
                runs.append(Run({"workload": f"w{w}", "copy": c, "round": rep}, res))
    slow_truth = (SLOW_COPY + COPIES - 1) / COPIES if slow_copy else 1.0
    truth = SCALING * math.exp(sum(math.log(t * slow_truth) for t in true) / WORKLOADS)
    result = study.analyse(_config(refs), runs, {"cpus": COPIES}, COPIES)
    return result, truth, planted, copy


def machine_level(model: str, campaigns: int = 4000, seed: int = 1) -> float:
    """exp(E log factor) of one campaign's repetitions under ``model``, its level shift left out: the
    speed a campaign's repetitions measure on average (a tail, a slow state, drift lower it)."""
    rng = random.Random(f"{seed}-{model}-level")
    total, n = 0.0, 0
    for _ in range(campaigns):
        camp = Campaign(MODELS[model], rng)
        for _ in range(REPS * WORKLOADS):
            total += math.log(camp.factor() / camp.level)
            n += 1
    return math.exp(total / n)


def _named_copy(result, copy: int | None) -> tuple[bool, bool]:
    """(the planted copy named, any copy named)."""
    named = []
    for g in result.copy_groups:
        slow = set(g.slow) | (set(g.groups[1]["copies"]) if len(g.groups) == 2 else set())
        named.append(slow)
    return (copy is not None and all(copy in s for s in named)), any(named)


def check(model: str, runs: int = 200, seed: int = 0) -> dict[str, float]:
    """Coverage, bad-repetition and slow-copy rates under one noise model."""
    rng = random.Random(f"{seed}-{model}")
    level = machine_level(model)
    covered = covered_mean = flagged_null = found_rep = copy_null = found_copy = 0
    for _ in range(runs):
        r, truth, _, _ = trial(rng, model)
        covered += r.score_ci[0] <= truth <= r.score_ci[1]
        covered_mean += r.score_ci[0] <= truth / level <= r.score_ci[1]
        flagged_null += bool(r.disagreeing)
        copy_null += _named_copy(r, None)[1]
        r, _, planted, _ = trial(rng, model, bad_rep=True)
        found_rep += any((d.workload, d.rep) == (f"w{planted[0]}", planted[1]) for d in r.disagreeing)
        r, _, _, copy = trial(rng, model, slow_copy=True)
        found_copy += _named_copy(r, copy)[0]
    return {"coverage": covered / runs, "coverage_mean": covered_mean / runs, "bad_rep_false": flagged_null / runs, "bad_rep_found": found_rep / runs,
            "copy_false": copy_null / runs, "copy_found": found_copy / runs}


def verdict_lines(runs: int = 200, models: tuple[str, ...] = MODEL_NAMES) -> list[str]:
    out = []
    for model in models:
        c = check(model, runs)
        out.append(f"verdict-check: score-interval-{model} coverage={c['coverage']:.3f} "
                   f"coverage_of_mean_speed={c['coverage_mean']:.3f} level=0.95 runs={runs}")
        out.append(f"verdict-check: score-bad-rep-{model} false_positive={c['bad_rep_false']:.3f} "
                   f"detection={c['bad_rep_found']:.3f} runs={runs}")
        out.append(f"verdict-check: score-slow-copy-{model} false_positive={c['copy_false']:.3f} "
                   f"detection={c['copy_found']:.3f} runs={runs}")
    return out
