"""The rounds an instances scan at two speeds needs, said where it found no gain past the CPU count.

The optimum's tests compare two points within the speeds (stats.speeds) only where each point's
own rounds show both: at 5 rounds a point they cannot (a speed fit needs 10 runs a side, and a
speed 3 runs of each side), so on a machine at two speeds the tests compare mixtures, and a 20 %
gain past the CPU count was found in 27 % of simulated campaigns. The scan as a whole can show the
speeds even so, and what it would take:

- each run's log distance from its point's median, pooled over every point of every policy: runs at
  their point's usual speed lie near 0, runs at the other speed near the gap between the speeds
  (stats.modes on those distances, by the same rule as on run times: BIC against one speed and
  against one speed with a tail, the modes 2.5 SD and 5 % apart, the smaller 10 % of the runs);
  the share h of the far mode is the share of runs away from their point's speed, at most the
  rarer speed's share (so what follows errs towards more rounds);
- the rounds r at which a point holds ``MIN_IN_SPEED`` runs at its rarer speed with probability
  0.9 (binomial at h), and at least ``MODES_MIN_N``, so that the speeds can be found in each point;
- and the rounds at which a one-sided test at Holm's first step (alpha / k over the k points past
  the CPU count) sees ``RESOLUTION`` with 80 % power within a speed: normal theory with the
  rank-sum test's efficiency against the t test (3 / pi), n = 2 ((z(1 - alpha / k) + z(0.8)) s /
  log(1 + d))^2 / (3 / pi), s the spread within a speed (1.4826 x the median distance of the near
  mode: the SD of a half-normal).

The larger of the two is asked for (``--reps N``) where it is above the rounds run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Sequence

from perflab.stats.modes import detect_modes
from perflab.stats.speeds import MIN_IN_SPEED, MODES_MIN_N

RESOLUTION = 0.05  # a gain past the CPU count worth running more copies than CPUs for
POWER = 0.8
EFFICIENCY = 3 / math.pi  # Mann-Whitney against the t test, normal noise
IN_SPEED_PROBABILITY = 0.9


@dataclass(frozen=True)
class Seen:
    """Two speeds in a scan: the share of runs away from their point's speed, the spread within one."""

    share: float
    spread: float
    gap: float  # the far mode's centre: the log distance between the speeds, about


def two_speeds(points: Sequence[Sequence[float]]) -> Seen | None:
    """Two speeds in the rounds of a scan's points (module doc), or None where one is seen."""
    dist: list[float] = []
    runs = 0
    for xs in points:
        if len(xs) < 2 or not all(0 < x < math.inf for x in xs):
            continue
        logs = sorted(math.log(x) for x in xs)
        m = _median(logs)
        runs += len(logs)
        dist += [abs(x - m) for x in logs if x != m]  # the median itself says nothing
    if len(dist) < MODES_MIN_N:
        return None
    # distances as factors above 1: stats.modes fits the log of positive values
    fit = detect_modes([math.exp(d) for d in dist])
    if not fit.multimodal:
        return None
    near = [d for d, lab in zip(dist, fit.labels) if lab == 0]
    spread = 1.4826 * _median(near) if near else 0.0
    return Seen(fit.modes[1].n / runs, spread, math.log(fit.modes[1].center))


def rounds_needed(seen: Seen, past: int, alpha: float) -> int:
    """The rounds a point at which its rarer speed holds MIN_IN_SPEED runs (probability 0.9) and a
    test within a speed sees RESOLUTION (80 % power, Holm's first step over ``past`` points)."""
    r = MODES_MIN_N
    while _below(r, seen.share, MIN_IN_SPEED) > 1 - IN_SPEED_PROBABILITY:
        r += 1
    z = NormalDist().inv_cdf(1 - alpha / max(past, 1)) + NormalDist().inv_cdf(POWER)
    n = 2 * (z * seen.spread / math.log1p(RESOLUTION)) ** 2 / EFFICIENCY
    return max(r, math.ceil(n))


def sentence(seen: Seen, reps: int, need: int, past: bool = True) -> str:
    what = "a gain of {:.0%} past the CPU count" if past else "a difference of {:.0%} between two N"
    return (f"the rounds ran at two speeds about {math.exp(seen.gap):.2f}x apart ({seen.share:.0%} of runs "
            f"away from their point's usual speed), and {reps} rounds a point are too few to compare "
            f"within the speeds; about {need} rounds (--reps {need}) would see "
            f"{what.format(RESOLUTION)} (80 % power)")


def fork_rounds(ratios: Sequence[float], points: int, alpha: float) -> tuple[Seen, int] | None:
    """(the speeds seen, rounds a point) where the fork-master's paired ratios NUMA / no NUMA fell
    at two speeds: a pair whose two runs fell at different speeds holds the gap, not the gain,
    and its sign is a coin's. The exact sign test over n pairs sees RESOLUTION with 80 % power
    where n = ((z(1 - alpha / 2) / 2 + z(0.8) sqrt(p (1 - p))) / (p - 1/2))^2 (normal
    approximation), p = (1 - h) Phi(log(1 + d) / s) + h / 2: h the share of pairs away from
    the usual speed (two_speeds on the log ratios), s their spread within a speed. None at one
    speed."""
    seen = two_speeds([ratios])
    if seen is None or seen.spread <= 0:
        return None
    q = NormalDist().cdf(math.log1p(RESOLUTION) / seen.spread)
    p = (1 - seen.share) * q + seen.share / 2
    za, zb = NormalDist().inv_cdf(1 - alpha / 2), NormalDist().inv_cdf(POWER)
    n = ((za / 2 + zb * math.sqrt(p * (1 - p))) / (p - 0.5)) ** 2
    return seen, math.ceil(n / max(points, 1))


def fork_sentence(seen: Seen, need: int, rounds: int) -> str:
    return (f"the paired rounds fell at two speeds about {math.exp(seen.gap):.2f}x apart ({seen.share:.0%} "
            f"of pairs across them, which hold the gap, not the gain), and {rounds} rounds are too few to "
            f"see past them; about {need} rounds (--reps {need}) would see {RESOLUTION:.0%} (80 % power)")


def _below(n: int, p: float, k: int) -> float:
    """P(Binomial(n, p) < k)."""
    return sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k))


def _median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    m = len(s) // 2
    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2
