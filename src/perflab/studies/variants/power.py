"""The rounds a variants campaign at two speeds needs, said where it named no fastest variant.

Under two speeds each comparison pairs only the rounds whose two runs fell at one speed
(analysis._compare): a share of the rounds is left out, and the paired log ratios of the rest carry
the noise within a speed. Where such a campaign named no fastest variant, its output says what its
rounds can see and how many rounds would see ``RESOLUTION``, as ``perflab run`` does for runs:

- the spread s of the paired log ratios (1.4826 x MAD about each variant's own median, pooled over
  the variants compared with the baseline) and the kept share f (kept pairs / rounds paired);
- Wilcoxon's signed-rank test at Holm's first step (alpha / k over k variants), two-sided, with
  80 % power: n = ((z(1 - alpha / 2k) + z(0.8)) s / log(1 + d))^2 / (3 / pi) kept pairs (normal
  theory with the signed-rank test's efficiency against the t test, 3 / pi), so the smallest d
  the campaign's n f rounds see, and the rounds n / f that would see ``RESOLUTION``.

``RESOLUTION`` is 2 %: below the 3 % a default campaign sees on a quiet machine, so that a real
3 % speed-up is found in most campaigns at the rounds asked for, not in four of five.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Sequence

RESOLUTION = 0.02
POWER = 0.8
EFFICIENCY = 3 / math.pi  # Wilcoxon signed-rank against the paired t test, normal noise


def _spread(diffs: Sequence[Sequence[float]]) -> float:
    """1.4826 x the MAD of every variant's paired log ratios about its own median, pooled."""
    dev = []
    for d in diffs:
        if len(d) >= 2:
            m = sorted(d)[len(d) // 2] if len(d) % 2 else sum(sorted(d)[len(d) // 2 - 1:len(d) // 2 + 1]) / 2
            dev += [abs(x - m) for x in d]
    if not dev:
        return math.nan
    dev.sort()
    n = len(dev)
    return 1.4826 * (dev[n // 2] if n % 2 else (dev[n // 2 - 1] + dev[n // 2]) / 2)


def _z(alpha: float, k: int) -> float:
    return NormalDist().inv_cdf(1 - alpha / (2 * max(k, 1))) + NormalDist().inv_cdf(POWER)


def seen_and_needed(diffs: Sequence[Sequence[float]], paired: Sequence[int], alpha: float) -> tuple[float, int] | None:
    """(smallest change the campaign's rounds see with 80 % power, rounds that would see
    RESOLUTION) from each compared variant's kept log ratios (pairs at one speed) out of its
    ``paired`` rounds; None where there is nothing to size it on."""
    k = len(diffs)
    s = _spread(diffs)
    kept = sum(len(d) for d in diffs) / max(k, 1)
    share = kept / max(sum(paired) / max(k, 1), 1)
    if math.isnan(s) or s <= 0 or kept < 2 or share <= 0:
        return None
    z = _z(alpha, k)
    seen = math.expm1(z * s / math.sqrt(EFFICIENCY * kept))
    pairs = (z * s / math.log1p(RESOLUTION)) ** 2 / EFFICIENCY
    return seen, math.ceil(pairs / share)


def sentence(seen: float, need: int) -> str:
    return (f"these rounds, paired within the speeds, see a difference of {seen:.1%} or more (80 % power); "
            f"about {need} rounds (--rounds {need}) would see {RESOLUTION:.0%}")
