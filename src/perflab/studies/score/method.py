"""The suite score: HEPscore's arithmetic, and the interval HEPscore does not give.

HEPscore's method (hep-score's ``hepscore.py``, ``_proc_results`` and ``gen_score``), reproduced to
its roundings so an imported report recomputes to its own ``score`` (872.266 for the public CI
result): per repetition, each reference metric's ratio ``value / reference`` rounded to 4 decimals;
the repetition's workload ratio is the geometric mean of those ratios, rounded to 4 decimals; the
workload's ratio is the median over the repetitions (the mean of the middle two for an even count);
the score is ``scaling`` x the weighted geometric mean of the workloads' ratios, rounded to 4
decimals.

The interval (``score_interval``): the repetitions are the unit. Per workload the log ratios of its
repetitions give a mean and a standard error (Student's t, n - 1 degrees of freedom); the log score
is a weighted sum of the workloads' mean logs, so its variance is the weighted sum of their squared
standard errors and its degrees of freedom Welch-Satterthwaite's. The interval is exp(mean log +-
t SE) x scaling: an interval on the geometric-mean score of the repetitions' means, which the
median-based HEPscore figure estimates too (the two agree where repetitions are symmetric around the
truth). Copies enter through the repetition's node throughput (their sum), not as units of their
own: copies of one repetition share its machine state, so they are not independent of each other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

LEVEL = 0.95
ALPHA = 0.05
METHOD = ("per workload, Student's t on the mean log ratio of its repetitions; the score's log a "
          "weighted sum of them, degrees of freedom by Welch-Satterthwaite")


def ratio4(value: float, reference: float) -> float:
    """One metric's ratio to its reference, rounded as HEPscore rounds it (4 decimals)."""
    return round(float(value) / float(reference), 4)


def weighted_geomean(values: Sequence[float], weights: Sequence[float] | None = None) -> float:
    """prod(v_i ** w_i) ** (1 / sum w): HEPscore's ``weighted_geometric_mean``, through logs."""
    weights = [1.0] * len(values) if weights is None else [float(w) for w in weights]
    total = sum(weights)
    if not values or len(values) != len(weights) or total <= 0:
        raise ValueError("a weighted geometric mean needs one positive weight per value")
    if any(not v > 0 for v in values):
        raise ValueError("a geometric mean needs positive values")
    return math.exp(sum(w * math.log(v) for v, w in zip(values, weights)) / total)


def rep_ratio(values: dict[str, float], references: dict[str, float]) -> float:
    """One repetition's workload ratio: the rounded geometric mean of its metrics' rounded ratios."""
    return round(weighted_geomean([ratio4(values[k], ref) for k, ref in references.items()]), 4)


def median_pick(xs: Sequence[float]) -> tuple[float, list[int]]:
    """(median, the repetitions it rests on): HEPscore's ``median_tuple`` (middle one, or the mean of
    the middle two)."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    mid = len(xs) // 2
    if len(xs) % 2:
        return float(xs[order[mid]]), [order[mid]]
    return (xs[order[mid - 1]] + xs[order[mid]]) / 2.0, [order[mid - 1], order[mid]]


def hepscore(ratios: Sequence[float], weights: Sequence[float], scaling: float) -> float:
    """scaling x the weighted geometric mean of the workloads' ratios, rounded to 4 decimals."""
    return round(weighted_geomean(ratios, weights) * float(scaling), 4)


def t_quantile(p: float, df: float) -> float:
    """Student's t quantile (scipy, imported on first use)."""
    from scipy.stats import t

    return float(t.ppf(p, df))


@dataclass(frozen=True)
class LogMean:
    """A workload's repetitions on the log scale: mean, standard error, degrees of freedom."""

    mean: float
    se: float
    df: int

    def interval(self, level: float = LEVEL) -> tuple[float, float]:
        q = t_quantile(1 - (1 - level) / 2, self.df)
        return math.exp(self.mean - q * self.se), math.exp(self.mean + q * self.se)


def log_mean(ratios: Sequence[float]) -> LogMean | None:
    """Mean and standard error of the log ratios; None with fewer than 2 repetitions."""
    n = len(ratios)
    if n < 2:
        return None
    logs = [math.log(r) for r in ratios]
    m = sum(logs) / n
    var = sum((x - m) ** 2 for x in logs) / (n - 1)
    return LogMean(m, math.sqrt(var / n), n - 1)


def score_interval(per_workload: Sequence[LogMean], weights: Sequence[float], scaling: float,
                   level: float = LEVEL) -> tuple[float, float, float] | None:
    """(centre, low, high) of the score at ``level``: see the module docstring; None when a
    workload has no spread to tell (fewer than 2 repetitions)."""
    total = sum(weights)
    parts = [(w / total, lm) for w, lm in zip(weights, per_workload)]
    centre = sum(c * lm.mean for c, lm in parts)
    var = sum((c * lm.se) ** 2 for c, lm in parts)
    if var == 0:
        value = scaling * math.exp(centre)
        return value, value, value
    # Welch-Satterthwaite: (sum v_i)^2 / sum (v_i^2 / df_i)
    df = var ** 2 / sum((c * lm.se) ** 4 / lm.df for c, lm in parts if lm.se > 0)
    q = t_quantile(1 - (1 - level) / 2, df)
    se = math.sqrt(var)
    return (scaling * math.exp(centre), scaling * math.exp(centre - q * se),
            scaling * math.exp(centre + q * se))


def score_difference(a: Sequence[LogMean], b: Sequence[LogMean], weights: Sequence[float],
                     level: float = LEVEL) -> tuple[float, float, float, float]:
    """Two machines' scores on the same suite: (ratio b/a, low, high, two-sided p) by Welch's t on
    the difference of their log scores (each a weighted sum of workload mean logs)."""
    total = sum(weights)
    parts = [(w / total, x, y) for w, x, y in zip(weights, a, b)]
    diff = sum(c * (y.mean - x.mean) for c, x, y in parts)
    terms = [(c * x.se) ** 2 for c, x, _ in parts] + [(c * y.se) ** 2 for c, _, y in parts]
    dfs = [x.df for _, x, _ in parts] + [y.df for _, _, y in parts]
    var = sum(terms)
    if var == 0:
        return math.exp(diff), math.exp(diff), math.exp(diff), 0.0 if diff else 1.0
    df = var ** 2 / sum(t ** 2 / d for t, d in zip(terms, dfs) if t > 0)
    from scipy.stats import t as student

    se = math.sqrt(var)
    q = float(student.ppf(1 - (1 - level) / 2, df))
    p = float(2 * student.sf(abs(diff) / se, df))
    return math.exp(diff), math.exp(diff - q * se), math.exp(diff + q * se), p
