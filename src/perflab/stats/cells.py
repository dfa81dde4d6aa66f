"""A members x cells table of level differences (time blocks, rounds of visits): its error variance.

Each cell is a member's median of its log values in one block or visit; the differences d to the
peers' median in the same cell vary about the member's own mean. Their pooled spread is
one-way ANOVA's error variance; the runs inside each cell give a floor (a median's variance).
"""

from __future__ import annotations

import math


def pooled(d, cells_var):
    """(error variance of a block difference, df): block-to-block spread pooled over members, or
    where larger what the runs inside the cells give."""
    import numpy as np

    m, b = d.shape
    resid = d - d.mean(axis=1, keepdims=True)
    df = (m - 1) * (b - 1)
    between = float((resid ** 2).sum() / (m * (b - 1)))
    return max(between, float(np.mean(cells_var))), df


def cell_var(logs) -> float:
    """Variance of a block median from its runs: pi/2 x (1.4826 MAD)^2 / n."""
    import numpy as np

    med = np.median(logs)
    mad = 1.4826 * float(np.median(np.abs(logs - med)))
    return math.pi / 2.0 * mad * mad / len(logs)
