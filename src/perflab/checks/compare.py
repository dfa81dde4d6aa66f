"""Does `perflab compare` find two campaigns 5 % apart, and stay quiet on equal ones, on every
kind of machine in checks/noise.py?

Each trial stores two `run` campaigns (A, B) of three commands, 10 runs each (run's default
--min-runs), in rounds of the three in shuffled order, into an in-memory store, and compares
them as `perflab compare A B` does (run_compare at its defaults: Moses'
interval at its real level, Holm, a 1 % minimum effect). Every campaign draws its own
``NoiseModel.campaign`` (so the ``shift`` model moves A's and B's levels apart, as another day
does); a round's burst slows one of its commands. Null: both campaigns of the same true times.
Planted: every run of B takes 5 % longer. A false alarm is any significant row in a null trial;
a detection is a planted trial whose wall time rows are significant with B slower and none says
B faster.

Replicated (`perflab compare 1,2,3 4,5,6`, studies/compare/replicated.py): K campaigns a side,
each drawing its own level, compared on campaign medians. Its planted effect is larger
(REPLICATED_PLANTED): under the 'shift' model (3 % SD between campaigns) 3 campaigns a side
cannot see 5 %, and the harness shows what they can.
"""

from __future__ import annotations

import random

from perflab.checks.noise import MODELS, STUDY_MODELS, StudyModel
from perflab.model import RunResult
from perflab.store import open_store
from perflab.studies.compare.study import CompareConfig, run_compare

PLANTED = 0.05
REPLICATED_PLANTED = 0.15
REPLICATES = 3
COMMANDS = (("fast", 0.05), ("mid", 0.08), ("slow", 0.12))
RUNS = 10


def _campaign(store, model: StudyModel, slower: float, rng: random.Random, runs: int = RUNS) -> int:
    """One stored `run` campaign of COMMANDS under ``model``, every run ``1 + slower`` longer."""
    camp = model.campaign(rng)
    cid = store.start_campaign("run", {"commands": [{"name": n} for n, _ in COMMANDS],
                                       "primary_metric": "events_per_s", "higher_is_better": True})
    for rep in range(runs):
        order = list(COMMANDS)
        rng.shuffle(order)
        hit = rng.randrange(len(order))  # the command a burst of this round lands on
        burst = camp.burst_hits()
        for i, (name, base) in enumerate(order):
            wall = base * (1 + slower) * camp.factor() * (burst if i == hit else 1.0)
            result = RunResult(wall_ns=round(wall * 1e9), user_s=0.9 * wall, sys_s=0.0, maxrss_kb=2048,
                               minflt=0, majflt=0, nvcsw=0, nivcsw=0, exit_code=0,
                               metrics={"events_per_s": 100.0 / wall})
            store.add_measurement(cid, result, {}, rep=rep, label=name)
    store.finish_campaign(cid, "done")
    return cid


def trial(slower_b: float, seed: int, model: StudyModel = MODELS["quiet"],
          runs: int = RUNS) -> tuple[bool, bool]:
    """(any significant row, B found slower in wall time and faster nowhere) for one pair."""
    rng = random.Random(seed)
    with open_store(":memory:") as store:
        a = _campaign(store, model, 0.0, rng, runs)
        b = _campaign(store, model, slower_b, rng, runs)
        res = run_compare(CompareConfig(a, b), store)
    sig = [r for r in res.rows if r.significant]
    walls = [r for r in sig if r.measure == "wall_s"]
    slower = bool(walls) and all(r.ratio > 1 for r in walls) and all(r.better != "B" for r in sig)
    return bool(sig), slower


def replicated_trial(slower_b: float, seed: int, model: StudyModel, k: int = REPLICATES,
                     runs: int = RUNS) -> tuple[bool, bool]:
    """trial() with k campaigns a side, compared as `perflab compare a1,..,ak b1,..,bk` does."""
    rng = random.Random(seed)
    with open_store(":memory:") as store:
        a = [_campaign(store, model, 0.0, rng, runs) for _ in range(k)]
        b = [_campaign(store, model, slower_b, rng, runs) for _ in range(k)]
        res = run_compare(CompareConfig(a[0], b[0], more_a=tuple(a[1:]), more_b=tuple(b[1:])), store)
    sig = [r for r in res.rows if r.significant]
    walls = [r for r in sig if r.measure == "wall_s"]
    slower = bool(walls) and all(r.ratio > 1 for r in walls) and all(r.better != "B" for r in sig)
    return bool(sig), slower


def replicated_rates(model: StudyModel, runs: int, seed: int = 0, k: int = REPLICATES,
                     planted: float = REPLICATED_PLANTED) -> tuple[float, float]:
    """(false-alarm rate, detection rate) of replicated compare over ``runs`` trials each."""
    fp = sum(replicated_trial(0.0, seed + i, model, k)[0] for i in range(runs)) / runs
    det = sum(replicated_trial(planted, seed + runs + i, model, k)[1] for i in range(runs)) / runs
    return fp, det


def rates(model: StudyModel, runs: int, seed: int = 0, per_campaign: int = RUNS) -> tuple[float, float]:
    """(false-alarm rate, detection rate) over ``runs`` null and ``runs`` planted trials, with
    ``per_campaign`` runs of each command in each campaign."""
    fp = sum(trial(0.0, seed + i, model, per_campaign)[0] for i in range(runs)) / runs
    det = sum(trial(PLANTED, seed + runs + i, model, per_campaign)[1] for i in range(runs)) / runs
    return fp, det


def verdict_check(runs: int = 200, seed: int = 0) -> list[str]:
    """One `verdict-check: compare-<model> ...` line per noise model of checks/noise.py."""
    lines = []
    for name, model in STUDY_MODELS.items():
        fp, det = rates(model, runs, seed)
        lines.append(f"verdict-check: compare-{name} false_positive={fp:.3f} detection={det:.3f} "
                     f"runs={runs}")
    # the models whose level moves between campaigns (another day; a vCPU's level of the moment)
    # and a busy one: what replicate campaigns do where one a side cannot tell drift from a change
    for name in ("shift", "vcpu-states", "loaded"):
        fp, det = replicated_rates(STUDY_MODELS[name], runs, seed)
        lines.append(f"verdict-check: compare-replicated-{name} false_positive={fp:.3f} "
                     f"detection={det:.3f} runs={runs} campaigns={REPLICATES}x{REPLICATES} "
                     f"planted=+{100 * REPLICATED_PLANTED:.0f}%")
    return lines
