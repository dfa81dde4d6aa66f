"""`perflab compare 3,4,5 8,9,10`: several campaigns a side, so drift between campaigns is measured.

One campaign a side cannot tell a change from a shift of the machine's level between the two
campaigns (another day, another load: 3 % is common, this VM moved +21 %), and no number of runs
inside a campaign averages that shift out. With replicate campaigns the campaign is the unit
(Kalibera & Jones, "Rigorous Benchmarking in Reasonable Time", 2013): each campaign's median of a
measure at a design point is one observation, and B/A with its interval comes from Welch's t on
the log campaign medians (judge.counted_test, the ratio the centre of the log interval), so
the campaign-to-campaign spread is inside the interval. Holm corrects over every row; a row is
significant when its adjusted p is below alpha and its interval lies wholly outside 1 +- the
--min-effect band. With k campaigns a side Welch's t has between k - 1 and 2k - 2 degrees of
freedom: the smallest detectable change is said, and 2 campaigns a side see only large changes.
Only points and measures present in every campaign of both sides are compared.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from perflab import stats
from perflab.errors import PerflabError
from perflab.stats import judge
from perflab.studies.compare.keys import higher_is_better, series

MIN_CAMPAIGNS = 2  # Welch's t needs a variance on each side


def check_sides(a: Sequence[int], b: Sequence[int]) -> None:
    """Refuse a side of one campaign (no spread to measure) or a campaign on both sides."""
    if min(len(a), len(b)) < MIN_CAMPAIGNS:
        raise PerflabError(f"replicate campaigns need {MIN_CAMPAIGNS} or more a side (A has {len(a)}, B "
                           f"{len(b)}): give e.g. 'perflab compare 3,4,5 8,9,10', or one id a side")
    both = sorted(set(a) & set(b))
    if both:
        raise PerflabError(f"campaign {both[0]} is on both sides: give each campaign to A or to B")
    if len(set(a)) < len(a) or len(set(b)) < len(b):
        raise PerflabError("a campaign is given twice on one side: list each campaign once")


def campaign_medians(study: str, campaigns: Sequence[Sequence[Any]]) -> tuple[dict, dict]:
    """Per design point and measure, one median per campaign (points in every campaign only)."""
    per = [series(study, meas) for meas in campaigns]
    if study == "run" and all(len(s) == 1 for s, _ in per):
        # One command a campaign (a CI job timing its build; paths differ per commit): the
        # campaigns' only commands are the point, whatever their command lines say.
        (k0,), t0 = per[0][0].keys(), per[0][1]
        per = [({k0: next(iter(s.values()))}, t0) for s, _ in per]
    keys = set.intersection(*(set(s) for s, _ in per))
    texts = per[0][1]
    out: dict[tuple, dict[str, list[float]]] = {}
    for key in keys:
        measures = set.intersection(*(set(s[key]) for s, _ in per))
        out[key] = {m: [stats.median(s[key][m]) for s, _ in per] for m in measures}
    return out, texts


def replicated_rows(study: str, campaigns_a: Sequence[Sequence[Any]], campaigns_b: Sequence[Sequence[Any]],
                    alpha: float, config: dict, min_effect: float, row_type: Any,
                    measure_order: Any) -> tuple[list, list[str], list[str], list[str]]:
    """CompareRows of campaign medians (module docstring); (rows, only in A, only in B, notes)."""
    ma, ta = campaign_medians(study, campaigns_a)
    mb, tb = campaign_medians(study, campaigns_b)
    notes = []
    if study == "run" and len(ma) == len(mb) == 1 and set(ma) != set(mb):
        (ka,), (kb,) = ma, mb
        notes.append(f"matched the only command of each campaign: '{ta[ka]}' (A) with '{tb[kb]}' (B)")
        mb, tb = {ka: mb[kb]}, {ka: tb[kb]}
    rows = []
    zero: list[str] = []
    for key in sorted(set(ma) & set(mb), key=lambda k: ta[k]):
        for measure in sorted(set(ma[key]) & set(mb[key]), key=measure_order):
            a, b = ma[key][measure], mb[key][measure]
            if min(min(a), min(b)) <= 0:
                zero.append(f"{measure} at {ta[key]}")
                continue
            if len(set(a) | set(b)) == 1:
                continue  # the same constant in every campaign (event counts): nothing to test
            p, lo, hi, level, mde = judge.counted_test(a, b, alpha)
            row = row_type(ta[key], measure, len(a), len(b), stats.median(a), stats.median(b),
                           math.sqrt(lo * hi), lo, hi, p, level=level)
            row.detectable = mde
            rows.append(row)
    for r, p in zip(rows, stats.holm([r.p_value for r in rows])):
        r.p_adjusted, r.alpha_used, r.min_effect = p, alpha, min_effect
        r.direction = higher_is_better(r.measure, config)
        r.significant = p < alpha and (r.lo > 1.0 + min_effect or r.hi < 1.0 - min_effect)
        if r.significant and r.direction is not None:
            r.better = "B" if (r.ratio > 1) == r.direction else "A"
    notes[:0] = [f"replicated: n A and n B count campaigns ({len(campaigns_a)} and {len(campaigns_b)}); "
             "each campaign's median is one observation (Kalibera & Jones) and B/A comes from "
             "Welch's t on their logs, so drift between campaigns is inside every interval"]
    wall = [r.detectable for r in rows if r.measure == "wall_s"]
    if wall:
        notes.append(f"smallest change these campaigns detect with 80 % power: up to "
                     f"{_pct(max(wall))} in wall time; more campaigns a side narrow it")
    if zero:
        notes.append(f"left out (a campaign median of 0 has no ratio): {', '.join(zero[:3])}"
                     + (f" and {len(zero) - 3} more" if len(zero) > 3 else ""))
    only_a = sorted(ta[k] for k in set(ma) - set(mb))
    only_b = sorted(tb[k] for k in set(mb) - set(ma))
    return rows, only_a, only_b, notes


def _pct(x: float) -> str:
    return "any change (too few campaigns)" if not math.isfinite(x) else f"{100 * x:.1f} %"
