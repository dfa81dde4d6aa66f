"""What HEPscore does not warn about: a repetition that disagrees with the others, and copies that
run slower than their peers.

**A disagreeing repetition** (``disagreeing``): each repetition's log ratio against the mean of the
same workload's other repetitions, scaled by sqrt(1 + 1/(n - 1)) so that every residual has the
repetition noise's variance under the null, over the repetition noise pooled from the *other*
workloads (their within-workload variances: a bad repetition does not widen its own yardstick), is
Student's t with the others' degrees of freedom; a workload's largest residual is flagged where it
exceeds t's quantile at ``alpha`` / (2 x repetitions tested), Bonferroni over every repetition of the
suite. At most one repetition per workload is named: with 3 repetitions one bad one also pushes the
other two's residuals half as far. (A median absolute residual pooled over all workloads as the
yardstick names a repetition in 12 % of quiet simulated suites.) The harness (checks/score.py)
measures the false alarms and detection.

**Slow copies** (``copy_groups``): the copies' values of one workload (a repetition's, or each
copy's median over the repetitions) tested for two speeds with stats.modes (a two-component mixture
against one speed by BIC, modes at least 2 % apart); where there is one speed, single slow copies by
the modified Z-score (Iglewicz & Hoaglin) below -3.5 and at least 2 % below the median copy (with
copies within 0.4 % of each other, a copy that met one burst of background load reached -3.5 at
1 % below: a passing event, not a slow place).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from typing import Mapping, Sequence

from perflab.stats.modes import detect_modes
from perflab.stats.outliers import modified_z_scores
from perflab.platform.sysfs import format_cpulist  # copy numbers as ranges: '0,3-5,9'

ALPHA = 0.05
MIN_COPIES = 10  # stats.modes tests two speeds from 10 values on
# Copies at two speeds 2 % apart are a placement effect worth naming (SMT siblings, a far NUMA node);
# the 5 % of stats.modes guards run times, whose clusters 1 % apart moved the gate.
MIN_GAP = 0.02


@dataclass(frozen=True)
class Disagreeing:
    """One repetition of one workload far from the others: its index, the ratio of its value to the
    mean of the others, and its residual in robust standard deviations."""

    workload: str
    rep: int
    ratio_to_others: float
    z: float
    chosen: bool  # the median repetition HEPscore's figure rests on

    def as_dict(self) -> dict:
        return asdict(self)


def disagreeing(reps: dict[str, Sequence[float]], chosen: Mapping[str, Sequence[int]] | None = None,
                alpha: float = ALPHA) -> tuple[list[Disagreeing], float | None]:
    """(flagged repetitions, the pooled SD of the log repetitions or None when too few to tell)."""
    logs = {name: [math.log(v) for v in values] for name, values in reps.items() if len(values) >= 3}
    ss = {name: sum((x - sum(xs) / len(xs)) ** 2 for x in xs) for name, xs in logs.items()}
    df = {name: len(xs) - 1 for name, xs in logs.items()}
    if len(logs) < 2:
        return [], None
    tests = sum(len(xs) for xs in logs.values())
    out = []
    for name, xs in logs.items():
        # The noise from the other workloads only: a bad repetition does not widen its own yardstick.
        rest_df = sum(d for k, d in df.items() if k != name)
        sigma = math.sqrt(sum(v for k, v in ss.items() if k != name) / rest_df)
        if sigma <= 0:
            continue
        n = len(xs)
        total = sum(xs)
        scale = math.sqrt(1 + 1 / (n - 1))
        resid = [(x - (total - x) / (n - 1)) / scale for x in xs]
        j = max(range(n), key=lambda i: abs(resid[i]))
        z = resid[j] / sigma
        if abs(z) > t_crit(alpha / (2 * tests), rest_df):
            values = reps[name]
            others = [v for i, v in enumerate(values) if i != j]
            gm = math.exp(sum(math.log(v) for v in others) / len(others))
            out.append(Disagreeing(name, j, values[j] / gm, z, j in (chosen or {}).get(name, ())))
    pooled = math.sqrt(sum(ss.values()) / sum(df.values()))
    return out, pooled


def t_crit(p: float, df: int) -> float:
    """The upper ``p`` quantile of Student's t (scipy, imported on first use)."""
    from scipy.stats import t

    return float(t.isf(p, df))


@dataclass(frozen=True)
class CopyGroups:
    """The copies of one workload (or benchmark): two speeds, or single slow copies, or neither."""

    name: str
    n: int
    groups: list[dict]  # [{"copies": [index...], "median": value}], fast group first
    slow: list[int]  # single slow copies (one speed)
    sentence: str

    def as_dict(self) -> dict:
        return asdict(self)


def copy_groups(name: str, values: Sequence[float], siblings: str = "") -> CopyGroups:
    """Two speeds among the copies (higher value = faster), or single slow copies. ``siblings``: what
    the host's topology says about why (e.g. SMT), added to the sentence."""
    vals = [float(v) for v in values]
    n = len(vals)
    if n < MIN_COPIES:
        return CopyGroups(name, n, [], [], f"{name}: {n} copies, too few to tell two speeds "
                          f"apart (needs {MIN_COPIES}); run more copies")
    # stats.modes reads run times (larger = slower): a rate's inverse is its time per unit.
    modes = detect_modes([1.0 / v for v in vals], min_gap=MIN_GAP)
    if modes.multimodal:
        fast = sorted(i for i, lab in enumerate(modes.labels) if lab == 0)
        slow = sorted(i for i, lab in enumerate(modes.labels) if lab == 1)
        mf = statistics.median(vals[i] for i in fast)
        ms = statistics.median(vals[i] for i in slow)
        groups = [{"copies": fast, "median": mf}, {"copies": slow, "median": ms}]
        sentence = (f"{name}: two speeds among {n} copies: {len(fast)} at {mf:.4g}, {len(slow)} at "
                    f"{ms:.4g} ({1 - ms / mf:.1%} slower): copies {format_cpulist(slow)}")
        return CopyGroups(name, n, groups, [], sentence + (f"; {siblings}" if siblings else ""))
    med = statistics.median(vals)
    slow1 = [i for i, z in enumerate(modified_z_scores(vals)) if z < -3.5 and vals[i] < (1 - MIN_GAP) * med]
    if slow1:
        worst = min(vals[i] for i in slow1)
        return CopyGroups(name, n, [], slow1, f"{name}: slow cop{'ies' if len(slow1) > 1 else 'y'} "
                          f"{format_cpulist(slow1)} of {n} (down to {1 - worst / med:.1%} below the median)")
    return CopyGroups(name, n, [], [], f"{name}: {n} copies at one speed (no slow copy)")
