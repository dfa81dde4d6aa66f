"""Confidence intervals that carry their real level.

``median_ci``: the distribution-free order-statistic interval for a median (the binomial
method, e.g. Conover, *Practical Nonparametric Statistics*, 3rd ed., sec. 3.2). With n samples
sorted, [x(j), x(n+1-j)] covers the population median with probability
1 - 2 P(Bin(n, 1/2) <= j - 1), whatever the distribution. The widest useful j whose coverage
still reaches the asked level is chosen; where even min..max cannot reach it (n = 3: 75 %,
n = 2: 50 %) the achieved level is reported instead of the asked one. A percentile bootstrap
claims 95 % there but covers 74 % at n = 3 and 52 % at n = 2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence


@dataclass(frozen=True)
class CI:
    """An interval and the confidence level it really has."""

    low: float
    high: float
    level: float

    def as_dict(self) -> dict[str, float]:
        return {"low": self.low, "high": self.high, "level": self.level}

    @classmethod
    def from_dict(cls, d: dict) -> "CI":
        return cls(float(d["low"]), float(d["high"]), float(d["level"]))

    @classmethod
    def from_optional(cls, d: dict | None) -> "CI | None":
        """``from_dict`` for an interval stored as null where there was none."""
        return cls.from_dict(d) if d else None

    def contains(self, x: float) -> bool:
        return self.low <= x <= self.high

    def label(self) -> str:
        """'95% CI' (or '75% CI' where fewer samples could not give more)."""
        return f"{self.level:.0%} CI"


def _binom_half_cdf(k: int, n: int) -> float:
    """P(Bin(n, 1/2) <= k), exactly for moderate n, by the normal approximation beyond."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if n <= 1000:
        return sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    z = (k + 0.5 - n / 2) / math.sqrt(n / 4)
    return 0.5 * math.erfc(-z / math.sqrt(2))


def coverage(n: int, j: int) -> float:
    """Coverage of [x(j), x(n+1-j)] (1-based order statistics) for the median of n samples."""
    return 1.0 - 2.0 * _binom_half_cdf(j - 1, n)


def median_ci(xs: Sequence[float], level: float = 0.95) -> CI:
    """Order-statistic CI of the median with its achieved level (>= level when n allows)."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must be in (0, 1), not {level}")
    data = sorted(float(x) for x in xs)
    n = len(data)
    if n == 0:
        return CI(math.nan, math.nan, 0.0)
    if n == 1:
        return CI(data[0], data[0], 0.0)
    # The largest j (narrowest interval) whose coverage still reaches the level. coverage(n, j + 1)
    # = 1 - 2 P(Bin(n, 1/2) <= j): the binomial sum is carried along (exact integers up to n = 1000,
    # as in _binom_half_cdf) instead of being summed again for every j.
    j, term, total = 1, 1, 1  # term = C(n, i), total = sum of C(n, 0..i), here i = 0
    while j + 1 <= (n + 1) // 2:
        term = term * (n - (j - 1)) // j  # C(n, j) from C(n, j - 1)
        total += term
        cov = 1.0 - 2.0 * (total / 2 ** n if n <= 1000 else _binom_half_cdf(j, n))
        if cov < level:
            break
        j += 1
    return CI(data[j - 1], data[n - j], coverage(n, j))
