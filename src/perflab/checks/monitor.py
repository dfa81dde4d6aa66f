"""Does energy net of idle power cover what the runs added, and stay quiet where they added nothing?

A node meter sampled once a second: ``IDLE`` samples before the study, ``STUDY`` samples in it,
``IDLE`` after, through studies.monitor.analyse as a monitored campaign's rows. The node idles at
``P0`` watts; the job adds ``PLANTED`` watts (planted) or nothing (null). What the runs added is
the planted watts times the study's seconds: the truth the net interval is held against. Noise
models, each a machine's meter as it is:
- iid: independent Gaussian fluctuation (sd 3 W) every sample;
- ar1: the same sd, autocorrelated from second to second (phi 0.8: fans and thermal inertia
  move slowly), so neighbouring idle samples carry less information than their count says;
- drift: iid, and the idle power rising 4 W from before the study to after it (a warmer node),
  linearly through the study;
- integer: iid, read in whole watts (what a BMC's DCMI reading gives).
Per model: ``coverage`` is the share of planted trials whose net-energy interval holds the truth
(the interval claims at least the idle median's level, about 0.95); ``quiet`` the share of null
trials whose interval holds zero (it then says the runs drew nothing it can tell apart); ``found``
the share of planted trials whose interval lies above zero. The interval carries the idle power's
uncertainty only: the study phase's own fluctuation is energy really drawn, not error, and is
left in the truth's realisation, so a model where it is large shows here as lost coverage.
"""

from __future__ import annotations

import random

from perflab.studies.monitor import analyse

P0 = 200.0
PLANTED = 20.0
SD = 3.0
IDLE = 20
STUDY = 60
MODELS = ("iid", "ar1", "drift", "integer")


def trace(model: str, added: float, rng: random.Random) -> list[dict]:
    """One monitored campaign's rows: a sources row, then one node-meter sample a second."""
    n = 2 * IDLE + STUDY
    noise, prev = [], 0.0
    for _ in range(n):
        if model == "ar1":
            prev = 0.8 * prev + rng.gauss(0.0, SD * (1 - 0.8 ** 2) ** 0.5)
        else:
            prev = rng.gauss(0.0, SD)
        noise.append(prev)
    rows = [{"t_ns": 0, "wall": 0.0, "phase": "sources",
             "sample": {"interval_s": 1.0, "idle_s": float(IDLE), "have": ["node meter"], "lacks": []}}]
    for i in range(n):
        phase = "idle-before" if i < IDLE else "study" if i < IDLE + STUDY else "idle-after"
        base = P0 + (4.0 * min(1.0, max(0.0, (i - IDLE) / STUDY)) if model == "drift" else 0.0)
        watts = base + (added if phase == "study" else 0.0) + noise[i]
        if model == "integer":
            watts = float(round(watts))
        rows.append({"t_ns": (i + 1) * 1_000_000_000, "wall": float(i + 1), "phase": phase,
                     "sample": {"ipmi_w": watts, "busy": 0.9 if phase == "study" else 0.01}})
    return rows


def rates(model: str, runs: int = 200, seed: int = 0) -> dict[str, float]:
    rng = random.Random(f"monitor-{model}-{seed}")
    covered = quiet = found = 0
    level = 0.0
    for _ in range(runs):
        planted = analyse(trace(model, PLANTED, rng), events=1000.0).energy[0]
        truth = PLANTED * planted.seconds
        lo, hi = planted.net_j_ci or (float("nan"), float("nan"))
        covered += lo <= truth <= hi
        found += lo > 0
        level = planted.level
        null = analyse(trace(model, 0.0, rng), events=1000.0).energy[0]
        lo, hi = null.net_j_ci or (float("nan"), float("nan"))
        quiet += lo <= 0 <= hi
    return {"coverage": covered / runs, "quiet": quiet / runs, "found": found / runs, "level": level}


def verdict_lines(runs: int = 200, seed: int = 0) -> list[str]:
    """The lines bench/verdicts.py prints: per model, the false alarm (1 - quiet), detection
    (found) and the net interval's coverage against the level it claims."""
    out = []
    for model in MODELS:
        r = rates(model, runs, seed)
        out.append(f"verdict-check: monitor-net-energy-{model} false_positive={1 - r['quiet']:.3f} "
                   f"detection={r['found']:.3f} coverage={r['coverage']:.3f} level={r['level']:.3f} runs={runs}")
    return out
