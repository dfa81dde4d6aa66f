"""Counted measures in `perflab compare`: the cachegrind instrument's counts judged as the gate
judges them.

Instructions, simulated misses and estimated cycles are counts, not times: where every run of
each side lies within judge.COUNTED_SPREAD of its median, ranks waste runs (2 runs a side
cannot give a Mann-Whitney p below 0.33), so B/A is tested by judge.counted_test (Welch's t
on log values, exact where both sides are constant), the ratio its geometric-mean ratio. A count
does not drift with the machine, so the --min-effect band applies to it only where it is given.
Only the instrument's own measures are judged so: a user time of 0.004 s in every run, or a
metric that happens to repeat in two runs, is no count.
"""

from __future__ import annotations

import math
from typing import Sequence

from perflab.measure import cachegrind
from perflab.stats import judge


def is_counted(measure: str, a: Sequence[float], b: Sequence[float]) -> bool:
    """Whether ``measure`` is one of the instrument's counts and counted on both sides."""
    return measure.removeprefix("metric:") in cachegrind.ALL_MEASURES and judge.counted(a, b)


def test(a: Sequence[float], b: Sequence[float], alpha: float) -> tuple[float, float, float, float, float]:
    """(p, B/A, CI low, CI high, level) by judge.counted_test; B/A the centre of the log CI."""
    p, lo, hi, level, _ = judge.counted_test(a, b, alpha)
    return p, math.sqrt(lo * hi), lo, hi, level


def stratified_test(strata: Sequence[tuple[Sequence[float], Sequence[float]]],
                    alpha: float) -> tuple[float, float, float, float, float]:
    """(p, B/A, CI low, CI high, level) across points of counts: the mean over points of each
    point's difference of mean log counts, its variance the sum of the points' Welch variances
    over k^2, Welch-Satterthwaite degrees of freedom; exact where every side is constant."""
    k = len(strata)
    d = 0.0
    parts: list[tuple[float, int]] = []  # (variance of a side's mean log / k^2, its df)
    for a, b in strata:
        la, lb = [math.log(x / a[0]) for x in a], [math.log(x / b[0]) for x in b]
        ma, mb = sum(la) / len(la), sum(lb) / len(lb)
        d += (math.log(b[0] / a[0]) + mb - ma) / k
        for logs, m in ((la, ma), (lb, mb)):
            var = sum((x - m) ** 2 for x in logs) / (len(logs) - 1)
            parts.append((var / len(logs) / k ** 2, len(logs) - 1))
    v = sum(p for p, _ in parts)
    if v == 0:
        return (0.0 if d else 1.0), math.exp(d), math.exp(d), math.exp(d), 1.0
    from scipy.stats import t as student_t

    df = v ** 2 / sum(p ** 2 / n for p, n in parts if p)
    se = math.sqrt(v)
    q = student_t.ppf(1 - alpha / 2, df)
    return float(2 * student_t.sf(abs(d) / se, df)), math.exp(d), math.exp(d - q * se), math.exp(d + q * se), 1 - alpha


def note(names: Sequence[str], band: float) -> str:
    """The line that says which measures were judged as counts, and with what band."""
    said = (f"outside 1 +- {100 * band:g} % (--min-effect)" if band
            else "no --min-effect band unless given (a count does not drift with the machine)")
    return (f"counted, not timed: {', '.join(names)} (every run within {judge.COUNTED_SPREAD:.0e} "
            f"of its side's median): Welch's t on log values, exact where both sides are constant, "
            f"as the gate judges them; {said}")


def ci_words(ratio: float, lo: float, hi: float, level: float) -> str:
    """'95% CI of B/A [0.98, 1.01]', or 'B/A exactly 1.005' where both sides are constant counts."""
    if level == 1.0:
        return f"B/A exactly {ratio:.6g} (constant counts on both sides)"
    return f"{100 * level:.0f}% CI of B/A [{lo:.4g}, {hi:.4g}]"
