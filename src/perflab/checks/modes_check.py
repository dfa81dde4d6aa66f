"""Does the multimodality test name two speeds where there are two, and stay quiet on one?

Null: 30 run times from one log-normal distribution (5 % spread), as a quiet machine gives.
Planted: the 16-vCPU KVM guest of issue 21, whose runs switched between about 128 and 190
events/s; here 30 runs, each at one of the two speeds (a share of 30-70 % at the slow one), with
the same 5 % spread around each. A false positive is "more than one mode" on the null; a
detection is two modes found with centres within 10 % of the planted ones.
"""

from __future__ import annotations

import random

from perflab.stats.modes import detect_modes

N = 30
SIGMA = 0.05
FAST, SLOW = 1 / 190, 1 / 128  # seconds per event at the two speeds


def trial(planted: bool, rng: random.Random) -> bool:
    """True when the verdict is 'more than one mode' (null) or finds the planted two (planted)."""
    share = rng.uniform(0.3, 0.7)
    xs = [(SLOW if planted and rng.random() < share else FAST) * rng.lognormvariate(0, SIGMA) for _ in range(N)]
    found = detect_modes(xs)
    if not planted:
        return len(found.modes) > 1
    if len(found.modes) != 2:
        return False
    centers = sorted(m.center for m in found.modes)
    return abs(centers[0] / FAST - 1) < 0.1 and abs(centers[1] / SLOW - 1) < 0.1


def verdict_check(runs: int = 200, seed: int = 0) -> tuple[float, float]:
    """(false-positive rate, detection rate); prints the line bench/verdicts.py collects."""
    rng = random.Random(seed)
    fp = sum(trial(False, rng) for _ in range(runs)) / runs
    det = sum(trial(True, rng) for _ in range(runs)) / runs
    print(f"verdict-check: modes false_positive={fp:.3f} detection={det:.3f} runs={runs}", flush=True)
    return fp, det
