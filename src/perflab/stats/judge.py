"""The gate's judgement of one gated measure: power, two speeds, drift between campaigns.

* Power: the smallest change the gate could see at these runs, (z_{1-a/2} + z_power) x the SE
  of a difference of log medians, 1.2533 s sqrt(1/n_a + 1/n_b) (the median's efficiency against
  the mean on normal data, s the pooled MAD-based SD of the log runs), at a = alpha / m (Holm's
  first step over the m gated tests); infinite when even complete separation of the runs
  cannot give an exact Mann-Whitney p below a (2 / C(n_a + n_b, n_a): 2 runs a side reach 0.33,
  3 reach 0.1). Above the threshold the gate cannot pass: "too few runs".
* Two speeds (stats.speeds, found in the pooled runs with B aligned on A): like is compared with
  like, A's runs at a speed with B's at the same speed; one side at one speed is compared with the
  other side's runs at the speed it matches, unless it is so far from both that a change cannot
  be told from a change of speed (inconclusive).
* Drift (Kalibera & Jones: the campaign median as the unit): over the baseline's saves at its
  current level (within twice the threshold of the newest), the variance of a campaign median
  is half the variance of successive differences about their mean (a steady trend, such as a
  ratchet of small regressions, does not count as drift); the candidate is held against the
  mean of those saves by a one-sided t test with (saves - 2) degrees of freedom.
* Counted measures (instructions and simulated misses under --instrument cachegrind): where
  every run of each side lies within COUNTED_SPREAD of its side's median, the measure is a count,
  not a time, and ranks waste runs: Welch's t test on the log values (exact when both sides are
  constant: the change is then known, p 0 or 1), whose power at 2 runs a side is what the spread
  allows (a 0.5 % change in instructions is seen with 2 runs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Sequence

from perflab.stats.describe import median
from perflab.stats.modes import Modes, detect_modes
from perflab.stats.speeds import within_speeds

MIN_SAVES = 3  # successive differences about their mean need three campaign medians
MODES_MIN_N = 10  # stats.modes reports one mode below this many runs
# Largest relative deviation from its side's median at which a measure counts as counted: Ir of
# minihlt under cachegrind moved by 6e-7 run to run, wall time by 1e-2 and more.
COUNTED_SPREAD = 1e-4


def log_spread(*samples: Sequence[float]) -> float:
    """Pooled SD of the log runs about each sample's own median: 1.4826 x MAD (robust to tails)."""
    dev = sorted(abs(math.log(x) - m) for s in samples
                 for m in [math.log(median(s))] for x in s)
    return 1.4826 * median(dev) if dev else 0.0


def median_var(sample: Sequence[float]) -> float:
    """Variance of the log median of a sample: (1.2533 s)^2 / n."""
    return (1.2533 * log_spread(sample)) ** 2 / len(sample)


def min_p(n_a: int, n_b: int) -> float:
    """The smallest two-sided exact Mann-Whitney p that n_a and n_b runs can give."""
    return min(1.0, 2 / math.comb(n_a + n_b, n_a))  # exact int division: no overflow


def min_detectable(a: Sequence[float], b: Sequence[float], alpha: float, power: float = 0.8) -> float:
    """Smallest relative change a run-level test finds with ``power`` (module docstring)."""
    if min_p(len(a), len(b)) >= alpha:
        return math.inf
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    se = 1.2533 * log_spread(a, b) * math.sqrt(1 / len(a) + 1 / len(b))
    return math.exp(z * se) - 1


def runs_needed(a: Sequence[float], b: Sequence[float], threshold: float, alpha: float,
                power: float = 0.8) -> int:
    """Runs a side at which min_detectable falls to ``threshold`` at the observed spread."""
    return runs_needed_at(log_spread(a, b), threshold, alpha, power)


def runs_needed_at(s: float, threshold: float, alpha: float, power: float = 0.8) -> int:
    """runs_needed for a pooled log spread s (log_spread) already computed."""
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    n = max(2, math.ceil(2 * (1.2533 * s * z / math.log1p(abs(threshold))) ** 2))
    while min_p(n, n) >= alpha:
        n += 1
    return n


def stratified_min_detectable(strata: Sequence[tuple[Sequence[float], Sequence[float]]], alpha: float,
                              power: float = 0.8) -> float:
    """Smallest change an 'all points' row sees with ``power``: infinite when van Elteren's test
    cannot reject even with B beyond A at every point (its best-case Z); else min_detectable's
    rule with the information summed over the points, 1 / (1/n_a + 1/n_b) each."""
    if not strata or _best_case_p([(len(a), len(b)) for a, b in strata]) >= alpha:
        return math.inf
    s = log_spread(*[x for a, b in strata for x in (a, b)])
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    info = sum(1 / (1 / len(a) + 1 / len(b)) for a, b in strata)
    return math.exp(z * 1.2533 * s / math.sqrt(info)) - 1


def stratified_runs_needed(strata: Sequence[tuple[Sequence[float], Sequence[float]]], threshold: float,
                           alpha: float, power: float = 0.8) -> int:
    """Equal runs a side at every point at which stratified_min_detectable falls to ``threshold``."""
    s = log_spread(*[x for a, b in strata for x in (a, b)])
    z = NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)
    n = max(2, math.ceil(2 * (1.2533 * s * z / math.log1p(abs(threshold))) ** 2 / len(strata)))
    while _best_case_p([(n, n)] * len(strata)) >= alpha:
        n += 1
    return n


def _best_case_p(sizes: Sequence[tuple[int, int]]) -> float:
    """van Elteren's two-sided p with B beyond A at every point (strata of n_a and n_b runs)."""
    num = sum(na * nb / (2 * (na + nb + 1)) for na, nb in sizes)
    var = sum(na * nb / (12 * (na + nb + 1)) for na, nb in sizes)
    return math.erfc(num / math.sqrt(var) / math.sqrt(2)) if var > 0 else 1.0


def counted(a: Sequence[float], b: Sequence[float]) -> bool:
    """Whether every run of each side is within COUNTED_SPREAD of its side's median (positive)."""
    if min(len(a), len(b)) < 2 or min(min(a), min(b)) <= 0:
        return False
    return all(abs(x / median(s) - 1) <= COUNTED_SPREAD for s in (a, b) for x in s)


def counted_test(a: Sequence[float], b: Sequence[float], alpha: float,
                 power: float = 0.8) -> tuple[float, float, float, float, float]:
    """(p, CI low, CI high, its level, smallest detectable change) of B/A for a counted measure:
    Welch's t on log values; constant sides give the exact ratio (p 0, or 1 when equal)."""
    # Logs taken about each side's first run: a constant side is then exactly constant (the
    # mean of 10 equal logs differed from 5 by 6e-16, and equal counts gave p 0.015).
    la, lb = [math.log(x / a[0]) for x in a], [math.log(x / b[0]) for x in b]
    ma, mb = sum(la) / len(la), sum(lb) / len(lb)
    va = sum((x - ma) ** 2 for x in la) / (len(la) - 1)
    vb = sum((x - mb) ** 2 for x in lb) / (len(lb) - 1)
    d = math.log(b[0] / a[0]) + mb - ma
    se = math.sqrt(va / len(la) + vb / len(lb))
    if se == 0:
        return (0.0 if d else 1.0), math.exp(d), math.exp(d), 1.0, 0.0
    from scipy.stats import t as student_t

    df = se ** 4 / ((va / len(la)) ** 2 / (len(la) - 1) + (vb / len(lb)) ** 2 / (len(lb) - 1))
    p = 2 * student_t.sf(abs(d) / se, df)
    q = student_t.ppf(1 - alpha / 2, df)
    return (float(p), math.exp(d - q * se), math.exp(d + q * se), 1 - alpha,
            math.exp((q + NormalDist().inv_cdf(power)) * se) - 1)


@dataclass(frozen=True)
class Pair:
    """What to compare: A's and B's runs of one speed (label '' when each side has one)."""

    label: str
    a: tuple[float, ...]
    b: tuple[float, ...]


def modes(values: Sequence[float]) -> Modes | None:
    """stats.modes' fit of a side, or None below MODES_MIN_N runs (it reports one mode there)."""
    return detect_modes(values) if len(values) >= MODES_MIN_N else None


def align(a: Sequence[float], b: Sequence[float],
          higher_is_better: bool | None = False) -> tuple[list[Pair], Modes | None, Modes | None, str]:
    """Like-with-like pairs, the modes of each side (None when not looked for), and why the
    comparison is inconclusive ('' when it is not): the speeds of stats.speeds (found in the
    pooled runs, B aligned on A), a pair for each speed both sides reached."""
    ma, mb = modes(a), modes(b)
    found = within_speeds(a, b, with_p=False, higher_is_better=higher_is_better)
    if not found.two:
        return [Pair("", tuple(a), tuple(b))], ma, mb, ""
    pairs = [Pair(f"{s.name} mode", s.a, s.b) for s in found.speeds if s.usable]
    return pairs, ma, mb, found.undecided


@dataclass(frozen=True)
class Drift:
    """The baseline's level over its recent saves and the spread of a campaign median."""

    saves: int  # saves at the current level used
    level: float  # mean log median of those saves
    var: float  # variance of one campaign's log median (drift plus within-campaign noise)
    df: int

    @property
    def sd(self) -> float:
        return math.sqrt(self.var)

    def test(self, x_log: float, extra_var: float, op: str, paired_level: float | None = None) -> tuple[float, float]:
        """(log change, one-sided p in the threshold's direction) of a campaign median against
        the level (or against one save's log median ``paired_level``), by Student's t."""
        from scipy.stats import t as student

        ref = self.level if paired_level is None else paired_level
        ref_var = self.var / self.saves if paired_level is None else self.var
        d = x_log - ref
        se = math.sqrt(self.var + extra_var + ref_var)
        if se == 0:
            return d, 0.0 if (d > 0) == (op == ">") and d != 0 else 1.0
        tt = d / se
        return d, float(student.sf(tt, self.df) if op == ">" else student.cdf(tt, self.df))

    def detectable(self, alpha: float, extra_var: float, power: float = 0.8) -> float:
        """Smallest change against the level found with ``power`` by the one-sided t test."""
        from scipy.stats import t as student

        se = math.sqrt(self.var * (1 + 1 / self.saves) + extra_var)
        return math.exp((float(student.ppf(1 - alpha, self.df)) + NormalDist().inv_cdf(power)) * se) - 1


def drift_shortfall(history: Sequence[Sequence[float]], threshold: float) -> str:
    """Why drift() finds no level in ``history`` ('' where it finds one), in words."""
    logs = [math.log(median(h)) for h in history if len(h) >= 2]
    if len(logs) < MIN_SAVES:
        return f"{len(logs)} of them measured it with 2 or more runs ({MIN_SAVES} needed)"
    span = 2 * math.log1p(abs(threshold))
    kept = sum(abs(x - logs[-1]) <= span for x in logs)
    if kept < MIN_SAVES:
        return (f"only {kept} of {len(logs)} lie within {100 * math.expm1(span):.3g} % of the newest "
                f"({MIN_SAVES} needed; a level further off is a change, not drift)")
    return ""


def drift(history: Sequence[Sequence[float]], threshold: float) -> Drift | None:
    """Drift over the saves (oldest first, the newest last) within 2 x threshold of the newest."""
    logs = [math.log(median(h)) for h in history if len(h) >= 2]
    if len(logs) < MIN_SAVES:
        return None
    span = 2 * math.log1p(abs(threshold))
    kept = [x for x in logs if abs(x - logs[-1]) <= span]
    if len(kept) < MIN_SAVES:
        return None
    diffs = [y - x for x, y in zip(kept, kept[1:])]
    mean = sum(diffs) / len(diffs)
    var = sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1) / 2
    # A floor: no campaign median is surer than its own runs make it.
    floor = sum(median_var(h) for h in history if len(h) >= 2) / len(history)
    return Drift(len(kept), sum(kept) / len(kept), max(var, floor), len(diffs) - 1)
