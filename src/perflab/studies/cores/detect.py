"""The per-core scan's rule for a slow CPU, and the smallest slowdown that rule detects.

One rule, used by the analysis and by the simulation that sizes it, so the two cannot drift
apart. On a CPU's per-round log-ratios v (its cost over the median of the others), with the
pooled noise scale s and its median level L:
- *extra* rounds: an outlier above its own level and clearly above the rest (modified Z > 3.5
  both ways, Iglewicz & Hoaglin) by at least min_effect: left out of its test;
- *normal* rounds: back at the others' level: clearly below its own level ((L - v) / s > 3.5),
  not clearly slower than the rest, and not a fast outlier either (v / s >= -3.5: a round in
  which the *others* were slow says nothing about this CPU). Noise that merely flips a round
  below 1 is none of these, so it cannot break persistence;
- *persistent*: at most floor((1 - persistence) n) normal rounds.
- the test: a one-sided sign test of the share of its (non-extra) rounds in which it was slower
  than the rest against 1/2, Holm-corrected over the CPUs. Not Wilcoxon's signed-rank test: that
  assumes symmetric log-ratios, and on a skewed machine (a floor plus a tail of interference) it
  called a CPU with no slowdown slow at Holm p = 0.005; the sign test needs no symmetry.

``detectable``: a formula (normal theory and Wilcoxon's efficiency) promised 2.4 % on a two-speed
VM where a 5 % slow CPU was called slow in 15 of 40 trials. Instead, for a slowdown x, TRIALS
simulated CPUs get n rounds of log(1 + x) + e, e resampled from this scan's own residuals
(smoothed bootstrap: plus normal jitter of 0.1 s, so resampling makes no ties), each judged by
the rule above with the sign test at Holm's first step (alpha / m); the answer is the smallest x
called slow in >= 90 % of them (bisection on log(1 + x), up to +300 %).
``noise_scale`` (the pooled s) and ``row_cis`` (every CPU's median CI) are the rule's inputs.
``block_detectable``: the same for the block test (timeline.py) on block levels.
"""

from __future__ import annotations

import math
from functools import lru_cache


from perflab.stats import CI, median_ci

OUTLIER_Z = 3.5  # Iglewicz & Hoaglin's modified Z cut-off
DETECT = 0.90  # "detectable": called slow in at least this share of simulated scans
TRIALS = 400
TOP = 3.0  # the largest slowdown tried (+300 %)
BLOCK_DROP = 2.5  # a block this many block-level SDs below a CPU's mean level: back at the others' level


def allowed(n: int, persistence: float) -> int:
    """Normal rounds a persistent CPU may have in n rounds."""
    return math.floor((1 - persistence) * n + 1e-9)


def round_sets(v, level, scale: float, min_effect: float) -> dict:
    """Boolean masks over v (rounds on the last axis; level broadcast against v): extra, clear
    (clearly slower than the rest), normal, and high (nearer its own level than the others')."""
    import numpy as np

    v = np.asarray(v, dtype=float)
    level = np.asarray(level, dtype=float)
    z, z0 = (v - level) / scale, v / scale
    big = v >= math.log1p(min_effect)
    clear = (z0 > OUTLIER_Z) & big
    return {"extra": (z > OUTLIER_Z) & clear, "clear": clear,
            "normal": (z < -OUTLIER_Z) & ~clear & (z0 >= -OUTLIER_Z),
            "high": v > level / 2}


def sign_greater(k: int, n: int) -> float:
    """One-sided sign test: P(X >= k) for X ~ Binomial(n, 1/2) (exact)."""
    if n <= 0 or k <= 0:
        return 1.0
    return min(1.0, sum(math.comb(n, i) for i in range(k, n + 1)) / 2.0 ** n)


@lru_cache(maxsize=None)
def sign_critical(n: int, alpha: float) -> float:
    """Smallest k whose one-sided sign-test p-value is <= alpha in n rounds; inf when none is."""
    return next((float(k) for k in range(n + 1) if sign_greater(k, n) <= alpha), math.inf)


def called_slow(v, scale: float, alpha: float, min_effect: float, persistence: float, rows_sorted: bool = False):
    """Per row of v (trials x rounds): would the scan call this CPU slow? ``rows_sorted``: each
    row of v is in ascending order, so its median is read off, not searched for (np.median's
    value: the middle one, or the mean of the middle two)."""
    import numpy as np

    n = v.shape[1]
    if rows_sorted and n:
        mid = n // 2
        level = v[:, mid:mid + 1] if n % 2 else (v[:, mid - 1:mid] + v[:, mid:mid + 1]) / 2
    else:
        level = np.median(v, axis=1, keepdims=True)
    sets = round_sets(v, level, scale, min_effect)
    kept = ~sets["extra"]
    k = ((v > 0) & kept).sum(axis=1)
    n_kept = kept.sum(axis=1)
    crit = np.array([sign_critical(i, alpha) for i in range(n + 1)])[n_kept]
    level = level[:, 0]
    persistent = sets["normal"].sum(axis=1) <= allowed(n, persistence)
    return (k >= crit) & (level >= math.log1p(min_effect)) & persistent


def detectable(resid, n: int, m: int, scale: float, alpha: float, min_effect: float, persistence: float,
               seed: int = 0) -> float:
    """Smallest slowdown (fraction) called slow in >= 90 % of simulated n-round scans of m CPUs
    under the noise resid (log-ratio residuals); inf when +300 % is not (module docstring)."""
    import numpy as np

    resid = np.asarray(resid, dtype=float)
    resid = resid[~np.isnan(resid)]
    if n < 2 or resid.size < 2 or math.isnan(scale) or scale <= 0:
        return math.inf
    if sign_critical(n, alpha / max(m, 1)) == math.inf:
        return math.inf
    rng = np.random.default_rng(seed)
    e = rng.choice(resid, size=(TRIALS, n)) + rng.normal(0.0, 0.1 * scale, size=(TRIALS, n))
    # The verdict counts rounds, so a scan's order of rounds does not change it; each row sorted
    # once stays sorted with any slowdown added (rounding is monotone), and every share() of the
    # search reads its medians off instead of partitioning (about half of a scan's time)
    e.sort(axis=1)

    def share(x: float) -> float:
        return float(called_slow(math.log1p(x) + e, scale, alpha / max(m, 1), min_effect, persistence,
                                 rows_sorted=True).mean())

    return smallest_detected(share, min_effect)


def noise_scale(d) -> float:
    """Robust SD of the round-to-round noise: 1.4826 x the MAD of every CPU's log-ratios around
    its own median, pooled over CPUs (mean absolute deviation x 1.2533 where the MAD is 0)."""
    import numpy as np

    d = d[~np.isnan(d).all(axis=1)]
    if d.size == 0:
        return math.nan
    dev = np.abs(d - np.nanmedian(d, axis=1, keepdims=True))
    dev = dev[~np.isnan(dev)]
    if dev.size == 0:
        return math.nan
    mad = float(np.median(dev))
    return 1.4826 * mad if mad > 0 else 1.2533 * float(dev.mean())


@lru_cache(maxsize=None)
def _order(n: int) -> tuple[int, float]:
    """(j, level) of the order-statistic median CI [x(j), x(n+1-j)] for n values (stats.median_ci)."""
    c = median_ci(range(n))
    return int(c.low) + 1, c.level


def row_cis(x) -> list[CI]:
    """median_ci of every row of x, NaNs left out, vectorised: one sort for all rows."""
    import numpy as np

    s = np.sort(x, axis=1)  # NaNs sort last
    out = []
    for row, n in zip(s, (~np.isnan(x)).sum(axis=1)):
        if n < 2:  # no interval: one value (or none) at level 0
            out.append(CI(float(row[0]), float(row[0]), 0.0))
            continue
        j, level = _order(int(n))
        out.append(CI(float(row[j - 1]), float(row[n - j]), level))
    return out


def median_se(k: int) -> float:
    """SD of the median of k independent unit normals: exact for k <= 3 (1, 1/sqrt 2, the median
    of 3's sqrt 0.449), sqrt(pi / 2k) beyond (slightly wide at 4 and 5: conservative)."""
    return {1: 1.0, 2: math.sqrt(0.5), 3: math.sqrt(0.449)}.get(k, math.sqrt(math.pi / (2 * k)))


def block_detectable(resid, blocks: int, scale: float, df: float, alpha: float, min_effect: float,
                     persistence: float, seed: int = 0) -> float:
    """Smallest slowdown called slow in >= 90 % of simulated scans by the block test
    (timeline.block_test at Holm's first step, alpha already divided by the CPUs): ``blocks``
    block levels log(1 + x) + e, e resampled from the scan's block-level residuals (inflated by
    sqrt(B / (B - 1)): residuals around a CPU's own mean are that much narrower, plus normal
    jitter of 0.1 scale), judged with the scan's own pooled scale and degrees of freedom (the
    median above log(1 + min_effect) by the t critical value) and every block (but 1 - persistence
    of them) above 0 and not below min_effect and clearly below the mean;
    inf when +300 % is not."""
    import numpy as np
    from scipy.special import stdtrit  # Student's t quantile

    resid = np.asarray(resid, dtype=float)
    resid = resid[~np.isnan(resid)]
    if blocks < 2 or resid.size < 2 or math.isnan(scale) or scale <= 0 or df <= 0:
        return math.inf
    rng = np.random.default_rng(seed)
    e = rng.choice(resid, size=(TRIALS, blocks)) * math.sqrt(blocks / (blocks - 1))
    e += rng.normal(0.0, 0.1 * scale, size=(TRIALS, blocks))
    crit = float(stdtrit(max(df, 1.0), 1.0 - alpha)) * scale * median_se(blocks)

    def share(x: float) -> float:
        lv = math.log1p(x) + e
        mean = lv.mean(axis=1)
        low = math.log1p(min_effect)
        short = (lv <= 0) | ((lv < low) & (lv < mean[:, None] - BLOCK_DROP * scale))
        every = short.sum(axis=1) <= allowed(blocks, persistence)
        return float(((np.median(lv, axis=1) - math.log1p(min_effect) >= crit) & every).mean())

    return smallest_detected(share, min_effect)


def smallest_detected(share, min_effect: float) -> float:
    """The smallest slowdown whose simulated scans are called slow in at least DETECT of them:
    bisection on log(1 + slowdown) between min_effect (nothing below it is called slow) and TOP,
    to 0.1 %; inf where even TOP is not."""
    if share(TOP) < DETECT:
        return math.inf
    if share(min_effect) >= DETECT:
        return min_effect
    lo, hi = math.log1p(min_effect), math.log1p(TOP)
    while hi - lo > 0.001:
        mid = (lo + hi) / 2
        if share(math.expm1(mid)) >= DETECT:
            hi = mid
        else:
            lo = mid
    return math.expm1(hi)
