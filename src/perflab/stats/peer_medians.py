"""Slow members from per-member summaries: the host as the unit, for fleets too large to rank every run.

perflab.stats.peers ranks every value of a group at once (Mann-Whitney U); at 100,000 hosts x
1,000 runs that is 100 million values in memory. Here each member brings only its summary (count,
median, the order statistics of its median's 97.5% interval), computed where the runs are stored:

- peers' median: the median of the other members' medians, with its order-statistic (binomial)
  interval at 97.5% over those medians (Hollander & Wolfe): the typical host of the platform,
  whose uncertainty comes from how many hosts there are and how much they differ;
- effect: the ratio of the member's median to the peers' median with the interval
  [lo_m/hi_p, hi_m/lo_p], which covers it with probability >= 95% (Bonferroni over the two);
- a member is a candidate when that interval lies below 1 and the ratio is at most
  1 - min_effect. Only candidates need a p-value: their runs are read back for an exact two-sided
  **sign test** against the peers' median (values equal to it dropped), corrected by
  **Bonferroni** over every member tested. Holm would need every member's p-value, hence every
  member's runs; Bonferroni needs only the candidate's, and rejects nothing Holm would not.

The member is slow when the corrected p < alpha as well. What it does not show: that the
others are equal, or why a member is slow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from perflab.stats.peers import PeerTest, median_ci_positions


@dataclass(frozen=True)
class MemberSummary:
    """What the test needs of one member: n, median, and its median's interval at 97.5%."""

    n: int
    median: float
    low: float | None
    high: float | None


def sign_test(xs: Sequence[float], reference: float) -> tuple[float, int, int]:
    """Two-sided exact sign test of median = reference: (p, values below, values not equal)."""
    import numpy as np

    arr = np.asarray(xs, dtype=float)
    below = int(np.count_nonzero(arr < reference))
    n = below + int(np.count_nonzero(arr > reference))
    if n == 0:
        return 1.0, 0, 0
    k = min(below, n - below)
    j = np.arange(k + 1, dtype=float)
    # P(Binom(n, 1/2) <= k) summed in log space: the terms of a 1,000-run host reach 2^-1000.
    log_terms = (math.lgamma(n + 1) - np.array([math.lgamma(i + 1) + math.lgamma(n - i + 1) for i in j])
                 - n * math.log(2.0))
    top = float(log_terms.max())
    log_cdf = top + math.log(float(np.exp(log_terms - top).sum()))
    return min(1.0, 2.0 * math.exp(log_cdf)), below, n


def slow_by_medians(
    groups: Mapping[str, Mapping[str, MemberSummary]],
    runs_of: Callable[[str, str], Sequence[float]],
    alpha: float = 0.05,
    min_effect: float = 0.03,
    confidence: float = 0.95,
) -> list[PeerTest]:
    """Every member against its group's other members' medians; ``runs_of(group, member)`` gives
    a candidate's values for its sign test. Members not tested (n < 2, fewer than 2 peers) carry
    level None; tested non-candidates carry no p-value."""
    import numpy as np

    if not 0.0 < alpha < 1.0 or not 0.0 < confidence < 1.0 or not 0.0 <= min_effect < 1.0:
        raise ValueError("alpha and confidence must lie in (0, 1), min_effect in [0, 1)")
    each = 1.0 - (1.0 - confidence) / 2.0
    tests: list[PeerTest] = []
    for group, members in groups.items():
        names = [m for m, s in members.items() if s.n > 0]
        meds = np.array([members[m].median for m in names], dtype=float)
        order = np.argsort(meds, kind="stable")
        sorted_meds = meds[order]
        position = np.empty(len(names), dtype=np.int64)
        position[order] = np.arange(len(names))
        h = len(names) - 1  # peers of each member
        if h >= 2:
            l_p, u_p, cov_p = median_ci_positions(h, each)

            def without_self(k: int):
                # The k-th smallest peer median of every member at once: one past k for a member
                # at or below it (perflab.stats.peers._kth_excluding with one position).
                return sorted_meds[np.where(position <= k, k + 1, k)]

            med_p_all = (without_self((h - 1) // 2) + without_self(h // 2)) / 2.0
            lo_p_all, hi_p_all = without_self(l_p), without_self(u_p)
        for i, name in enumerate(names):
            s = members[name]
            if s.n < 2 or h < 2 or s.low is None or s.high is None:
                tests.append(PeerTest(name, group, s.n, s.median, None, None, None, None, None, None))
                continue
            med_p, lo_p, hi_p = float(med_p_all[i]), float(lo_p_all[i]), float(hi_p_all[i])
            cov_m = median_ci_positions(s.n, each)[2]
            ratio = s.median / med_p if med_p > 0 else None
            low = s.low / hi_p if hi_p > 0 else None
            high = s.high / lo_p if lo_p > 0 else None
            level = max(0.0, 1.0 - (1.0 - cov_m) - (1.0 - cov_p))
            tests.append(PeerTest(name, group, s.n, s.median, med_p, ratio, low, high, level, None))
    m = sum(1 for t in tests if t.level is not None)
    out = []
    for t in tests:
        candidate = (t.level is not None and t.high is not None and t.high < 1.0 and t.ratio is not None
                     and t.ratio <= 1.0 - min_effect)
        if not candidate:
            out.append(t)
            continue
        assert t.peers_median is not None  # a level is set only beside a peers' median
        p, _, _ = sign_test(runs_of(t.group, t.member), t.peers_median)
        p_adj = min(1.0, m * p)
        out.append(PeerTest(**{**t.__dict__, "p_value": p, "p_adjusted": p_adj, "slow": p_adj < alpha}))
    return out
