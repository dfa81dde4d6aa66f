"""The full lab's time budget: each study's share of what is left, in rounds it can afford.

Each study that is still to run is an Item: a fixed cost (builds, its own kernels), a cost per
round (from the workload's seconds per run and the CPU count) and the fewest and most rounds it
takes. The fewest are what its test needs to reach an answer (the same rules
tests/real/test_lab_degrade.py holds the lab's settings to), so a study never gets fewer; the time
left above everyone's fewest is shared in proportion to what each study could still use
(most - fewest rounds, in seconds). The lab plans again before every study with the time that is
really left, so a study that overran shrinks the ones after it, down to their fewest.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from perflab.studies.instances.optimum import MIN_ROUNDS
from perflab.studies.variants.study import DEFAULT_ROUNDS

FULL_BUDGET = 540.0  # s of studies: the full lab (without --quick) in 10 minutes with its build and report
# Seconds of the studies that do not run the workload, as measured on a 2-CPU VM (their full
# settings over their quick ones): the frontend sweep and the micro benchmarks, the variants'
# builds (cached after the first lab) and the profile's recording and report.
FRONTEND_S = (8.0, 40.0)
MICRO_S = (3.0, 40.0)
VARIANT_BUILDS_S = 30.0
PROFILE_S = 10.0


@dataclass(frozen=True)
class Item:
    """One study's cost: ``fixed + rounds * per_round`` seconds, ``least <= rounds <= most``."""

    fixed: float
    per_round: float
    least: int
    most: int

    def cost(self, rounds: int) -> float:
        return self.fixed + rounds * self.per_round


def allot(items: Mapping[str, Item], left: float) -> dict[str, int]:
    """Rounds for each item so that the costs fit ``left`` seconds where their fewest do."""
    rounds = {k: it.least for k, it in items.items()}
    spare = left - sum(it.cost(it.least) for it in items.values())
    room = {k: (it.most - it.least) * it.per_round for k, it in items.items()}
    total = sum(room.values())
    if spare <= 0 or total <= 0:
        return rounds
    for k, it in items.items():
        if room[k] > 0:
            extra = int(math.floor(min(1.0, spare / total) * room[k] / it.per_round + 1e-9))
            rounds[k] = it.least + min(extra, it.most - it.least)
    # What the shares' rounding left over: one more round at a time, in turn, where it fits
    # (a study's one "round" may be a whole sweep, which no share of a tight budget reaches).
    left_over = left - sum(it.cost(rounds[k]) for k, it in items.items())
    grew = True
    while grew:
        grew = False
        for k, it in items.items():
            if rounds[k] < it.most and it.per_round <= left_over + 1e-9:
                rounds[k] += 1
                left_over -= it.per_round
                grew = True
    return rounds


def least_sign_rounds(alpha: float, tests: int, left_out: int = 0) -> int:
    """Fewest rounds whose smallest one-sided sign-test p, 2^-(n - left_out), passes alpha/tests."""
    n = 1
    while 0.5 ** (n - left_out) >= alpha / max(1, tests):
        n += 1
    return n


def items(order: list[str], seconds: float, ncpu: int, instance_points: Mapping[str, int],
          variants: int, cores_alpha: float, variants_alpha: float) -> dict[str, Item]:
    """The Items of the studies in ``order`` for a workload of ``seconds`` a run on ``ncpu`` CPUs.

    ``instance_points``: one round of the instances scan in workload run-lengths, "few" (its
    fewest N) and "full" (the thorough scan), each the sum over its points of ceil(copies / ncpu).
    """
    out: dict[str, Item] = {}
    for name in order:
        if name == "run":
            out[name] = Item(0.0, seconds, 10, 40)
        elif name == "cores":
            # the round rule with two rounds left out as disturbed, Holm over the CPUs
            least = max(8, least_sign_rounds(cores_alpha, ncpu, left_out=2))
            out[name] = Item(0.0, ncpu * seconds, least, max(least, 30))
        elif name == "instances":
            # MIN_ROUNDS rounds a point always; the thorough scan is its one extra "round"
            few, full = instance_points["few"], instance_points["full"]
            reps = max(5, MIN_ROUNDS)
            out[name] = Item(reps * few * seconds, reps * (full - few) * seconds, 0, 1 if full > few else 0)
        elif name == "variants":
            # Wilcoxon's smallest p, 2/2^n, Holm over the variants compared with the baseline
            least = max(8, least_sign_rounds(variants_alpha / 2, variants - 1))
            out[name] = Item(VARIANT_BUILDS_S, variants * seconds, least, max(least, DEFAULT_ROUNDS))
        elif name == "profile":
            out[name] = Item(PROFILE_S + 4 * seconds, 0.0, 0, 0)  # the slowest-event run, 3 recordings
        elif name == "frontend":
            out[name] = Item(FRONTEND_S[0], FRONTEND_S[1] - FRONTEND_S[0], 0, 1)  # 1: the full sweep
        elif name == "micro":
            out[name] = Item(MICRO_S[0], MICRO_S[1] - MICRO_S[0], 0, 1)  # 1: the full scale
    return out
