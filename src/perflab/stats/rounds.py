"""Slow members judged in rounds of visits: each member measured once a round, the rounds compared.

Where fewer members run at once than there are (one node at a time), no run of one has a peer's
run of the same time; measured once each, a member's level carries whatever the machine did in
its window. Measured V times in rounds (round r visits every member once, in an order rotated
from round to round), each round is a comparison of its own:

- a member's level in round r is the median of its log values in that visit;
- d[i, r] = that level minus the median of its peers' levels in round r;
- per member a one-sided t-test of the mean of its d[i, r] (H0: not below its peers), the
  spread of d about each member's own mean pooled over the members (one-way ANOVA's error
  variance), or where larger the variance of a visit's median that its runs give; degrees of
  freedom (m - 1)(R - 1) (the differences of m members to their peers share m - 1 per round);
- slow: Holm p < alpha (over every member tested, with the other groups'), the ratio
  exp(mean d) at most 1 - min_effect, its t interval below 1, and below its peers in every round
  (with more than 3 rounds: in each third of them, its mean d over the third's rounds).

What it does not show: that unflagged members are equal, or why a member is slow; a state of
the machine that lasted through every one of a member's visits (and none of its peers') is not
told from the member.
"""

from __future__ import annotations

import math
from typing import Mapping

from perflab.stats.cells import cell_var, pooled

MIN_ROUNDS = 2
PARTS = 3  # the persistence rule: below the peers in each third of the rounds (each round, R <= 3)


def common_rounds(rounds: Mapping[str, object]) -> list[int]:
    """The rounds every member has a visit in (each with at least one run), sorted."""
    import numpy as np

    sets = [set(int(x) for x in np.unique(np.asarray(r, int))) for r in rounds.values()]
    return sorted(set.intersection(*sets)) if sets else []


def judge_rounds(logs: Mapping[str, object], rounds: Mapping[str, object], used: list[int]):
    """per member (mean of d, its SE, df, per-round d, per-third d), and df; ``logs``/``rounds``: a member's
    log values and the round of each, ``used``: the rounds compared (every member has each)."""
    import numpy as np

    names = list(logs)
    m, r = len(names), len(used)
    arr = {k: (np.asarray(logs[k], float), np.asarray(rounds[k], int)) for k in names}
    level = np.array([[np.median(arr[k][0][arr[k][1] == j]) for j in used] for k in names])
    cvar = np.array([[cell_var(arr[k][0][arr[k][1] == j]) for j in used] for k in names])
    peers = np.array([np.median(np.delete(level, i, axis=0), axis=0) for i in range(m)])
    d = level - peers
    var, df = pooled(d, cvar * (1.0 + math.pi / 2.0 / (m - 1)))
    # Why no autocorrelation factor (time blocks have one): a member's visits are a round apart,
    # with its peers' visits in between, so a state of the machine that holds from one of its
    # visits into the next would have to hold through its peers' visits too, and falls on them
    # alike. And why no term for a state held through the whole comparison (the peers' spread of
    # the time blocks' standard error): there, one window's state moves a member's mean without
    # showing between its blocks; here each visit has its own window, so a state held for a visit
    # is what makes d vary from round to round, and the pooled variance counts it already. A
    # state that held through all of a member's visits and none of its peers' is the member.
    se = math.sqrt(var / r)
    # The persistence rule on at most PARTS parts of consecutive rounds (each part's mean d): with
    # 3 rounds or fewer every round; with more, one lucky visit among 6 (a visit of a second or
    # two meets a burst of load or misses one) does not unmake a node slow in every third.
    parts = [d[:, idx].mean(axis=1) for idx in np.array_split(np.arange(r), min(PARTS, r))]
    out = {k: (float(d[i].mean()), se, float(df), tuple(float(x) for x in d[i]),
               tuple(float(p[i]) for p in parts)) for i, k in enumerate(names)}
    return out, float(df)
