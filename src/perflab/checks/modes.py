"""Does the two-speed test name two speeds where there are two, and stay quiet on one?

Samples of n run times of one command under each model of checks/noise.py. Null: every
single-speed model (quiet log-normal, a level shift, a skewed floor plus an exponential tail, a
loaded machine with drift and a tail), at n = 20, 30, 50 and 100; a false positive is "more than
one mode". Planted: the 'two-speed' model (factor 1.48, about 40 % of the runs slow, in stretches
of about 5 runs, as the 16-vCPU KVM guest); a detection is two modes whose centres lie within
10 % of the planted speeds. Runs of the two-speed model that happen to hold fewer than 3 slow
runs (the speed holds for stretches) count as misses: the user's sample is what it is.

The rule before the ex-Gaussian null (``detect_modes(tail_null=False, min_gap=0)``) called the skewed
single speed two modes in 14 % of samples at n = 30 (tests/unit/test_modes.py shows this harness
catches it).
"""

from __future__ import annotations

import random
from typing import Callable, Sequence

from perflab.checks.noise import MODELS
from perflab.stats.modes import Modes, detect_modes

SIZES = (20, 30, 50, 100)
BASE_S = 0.1
GOAL_N = 30  # the planted model must be found >= 90 % at this size


def sample(model: str, n: int, rng: random.Random) -> list[float]:
    """n run times of one command in one campaign under ``model``."""
    camp = MODELS[model].campaign(rng)
    return [BASE_S * camp.factor() for _ in range(n)]


def trial(model: str, n: int, rng: random.Random,
          detect: Callable[[Sequence[float]], Modes] = detect_modes) -> bool:
    """True when the verdict is 'more than one mode' (single-speed model) or finds the planted
    two (two-speed model)."""
    found = detect(sample(model, n, rng))
    two = MODELS[model].two_speed
    if two is None:
        return found.multimodal
    if len(found.modes) != 2:
        return False
    fast, slow = sorted(m.center for m in found.modes)
    return abs(fast / BASE_S - 1) < 0.1 and abs(slow / (BASE_S * two[0]) - 1) < 0.1


def rate(model: str, n: int, runs: int, seed: int = 0,
         detect: Callable[[Sequence[float]], Modes] = detect_modes) -> float:
    """The share of ``runs`` trials of ``model`` at size n that say two modes (or find them)."""
    rng = random.Random(f"{seed}-{model}-{n}")
    return sum(trial(model, n, rng, detect) for _ in range(runs)) / runs


def verdict_lines(runs: int = 200, seed: int = 0) -> list[str]:
    """One line per model and size: false positives of the single-speed models, detection of
    the two-speed one."""
    lines = []
    for name, model in MODELS.items():
        for n in SIZES:
            r = rate(name, n, runs, seed)
            what = "detection" if model.two_speed else "false_positive"
            lines.append(f"verdict-check: modes-{name}-n{n} {what}={r:.3f} runs={runs}")
    return lines


def verdict_check(runs: int = 200, seed: int = 0) -> list[str]:
    """The lines bench/verdicts.py prints (it prints a returned list)."""
    return verdict_lines(runs, seed)
