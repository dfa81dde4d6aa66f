"""`perflab instances --until-decided`: rounds until the optimum's open question is decided at
--min-effect, or the budget ends (stats.sequential's design, as `perflab run --until-decided`).

The question a scan cannot settle at a fixed count is whether N copies past the CPU count gain
over the best N at or below it (optimum.choose's first step): a machine that gains nothing there
must not be told to run more copies than CPUs, and one whose copies wait on I/O should be. Each
round runs every point (shuffled, as always). At each look, for every policy and every N past the
CPU count, the ratio of its throughput to ``ref`` (the highest median at or below the CPU count)
gets Moses' interval (stats.shift.ratio_ci) at the look's level: a repeated confidence interval,
its share of alpha (Bonferroni over the points compared) spent over the looks by the
O'Brien-Fleming-type function. The question is one-sided, so either answer is a bound:

- ``gain``: the interval lies above 1 and the ratio is at least 1 + m (a gain of m or more shown);
- ``no gain``: the interval's top is at most 1 + m (a gain of m or more ruled out; a loss is no gain);
- ``''``: undecided.

The rounds stop at the first look where every such point is decided; where the budget (--max-runs
rounds, DEFAULT_BUDGET, cut to what --max-time holds at the first round's pace) ends first, the
verdict says "cannot tell" with about the rounds that would decide it. The optimum is then chosen
as without looks, with these decisions in place of the Holm step past the CPU count.

What it does not show: the fixed-sequence tests among the N at or below the CPU count (which of
them is the optimum) are made once, on the rounds the stop left, at alpha; the stop, driven by the
points past the CPU count, is not accounted for in them. The fork-master comparison is not made
sequential (it keeps its fixed rounds).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from perflab.stats import CI, median, sequential
from perflab.stats.speeds import within_speeds, worth_looking
from perflab.studies.run import looks as run_looks
from perflab.studies.run.looks import Plan
from perflab.studies.run.result import duration

if TYPE_CHECKING:  # the study module imports this one
    from perflab.studies.instances.study import InstancesConfig

DEFAULT_BUDGET = 60  # rounds: a round runs every point of every policy, so it is the study's slow unit
DESIGN = "obf"


def budget(config: InstancesConfig, first_round_s: float) -> int:
    """Rounds the campaign may take: --max-runs (DEFAULT_BUDGET), cut to what --max-time holds at
    the first round's pace."""
    return run_looks.capped(config, first_round_s, DEFAULT_BUDGET)


def first(config: InstancesConfig) -> int:
    """The rounds of the first look."""
    return max(config.min_runs, 2)


def alpha_each(comparisons: int, alpha: float = 0.05) -> float:
    return alpha / max(1, comparisons)


def due(config: InstancesConfig, rounds: int, limit: int, comparisons: int) -> bool:
    """Whether a look that could decide falls after ``rounds`` rounds of a budget of ``limit``."""
    return any(lk.runs == rounds and lk.level < 1.0 - 1e-9
               for lk in sequential.planned(first(config), limit, alpha_each(comparisons), DESIGN))


def plan_at(config: InstancesConfig, rounds: int, limit: int, comparisons: int, final: bool) -> Plan:
    a = alpha_each(comparisons)
    final = final or rounds >= limit
    looks = sequential.design_at(first(config), limit, min(rounds, limit) if final else rounds, a, final, DESIGN)
    return Plan(looks, limit, a, final)


def gain_decision(ratio: float, low: float, high: float, min_effect: float) -> str:
    """'gain' (a gain of min_effect or more shown), 'no gain' (one ruled out) or '' (undecided)."""
    if not all(math.isfinite(v) and v > 0 for v in (ratio, low, high)):
        return ""
    if low > 1.0 and ratio >= 1.0 + min_effect:
        return "gain"
    if high <= 1.0 + min_effect:
        return "no gain"
    return ""


def past_pairs(samples: Mapping[int, Sequence[float]], capacity: int | None, min_rounds: int) -> list[tuple[int, int]]:
    """(N past the CPU count, ref) for one scan: ref the highest median at or below it."""
    xs = {n: v for n, v in samples.items() if len(v) >= min_rounds and all(x > 0 for x in v)}
    inside = sorted(n for n in xs if capacity is None or n <= capacity)
    past = sorted(n for n in xs if capacity is not None and n > capacity)
    if not inside or not past:
        return []
    ref = max(inside, key=lambda n: median(xs[n]))  # ties: the smaller N
    return [(n, ref) for n in past]


def decide_past(samples: Mapping[int, Sequence[float]], pairs: Sequence[tuple[int, int]], level: float,
                min_effect: float) -> dict[int, tuple[str, float, Any, bool]]:
    """N -> (decision, ratio, CI, within two speeds) of each point past the CPU count against ref at
    ``level``."""
    out = {}
    for n, ref in pairs:
        a, b = samples[ref], samples[n]
        # like with like, as optimum.greater: where the pooled rounds run at two speeds, the
        # interval is the stratified one within the speeds (stats.speeds)
        w = within_speeds(a, b, level=level, with_p=False, look=worth_looking(a) or worth_looking(b),
                          higher_is_better=True)
        ratio, ci = w.ratio, CI(w.low, w.high, w.level)
        reached = w.level >= level - 1e-9 and not w.undecided
        out[n] = (gain_decision(ratio, ci.low, ci.high, min_effect) if reached else "", ratio, ci, w.two)
    return out


def settle(p: Plan, open_: Sequence[tuple[float, Any]], min_effect: float, rounds: int, per_round_s: float) -> None:
    """Whether everything is decided; where the budget ended first, about the rounds that would
    decide the least decided point (the interval's top must come under 1 + m, or its bottom over
    1: each side shrinks as 1/sqrt(n)), and their time at this campaign's pace."""
    p.decided = not open_
    if p.decided or not p.final:
        return
    needs = []
    for ratio, ci in open_:
        d, margin = math.log(ratio), math.log1p(min_effect)
        below, above = d - math.log(ci.low), math.log(ci.high) - d
        shown = rounds * (below / d) ** 2 if d > 0 else math.inf
        ruled = rounds * (above / max(margin - d, margin / 2.0)) ** 2
        needs.append(max(rounds + 1, math.ceil(round(min(shown, ruled), 6))))
    p.needs_runs = max(needs) if needs else 2 * rounds
    p.needs_s = p.needs_runs * per_round_s


def sentence(p: Plan, rounds: int, min_effect: float) -> str:
    head = (f"measured until decided: O'Brien-Fleming-type alpha spending (Lan-DeMets), {p.alpha:.2%} "
            f"a point past the CPU count over all looks (Bonferroni), a gain of {min_effect:.0%} or more "
            "shown or ruled out")
    if p.extra.get("compared") == 0:
        return (f"measured until decided: no N past the CPU count to decide (--n reaches no further), "
                f"so the rounds stopped at the first look ({rounds} rounds); the N at or below it are "
                "tested as without looks")
    if p.decided:
        return f"{head}; decided at look {len(p.looks)} ({rounds} rounds, budget {p.budget})"
    if not p.final:
        return f"{head}; stopped at look {len(p.looks)} ({rounds} rounds) before a decision"
    return (f"{head}; cannot tell within the budget ({rounds} rounds): about {p.needs_runs} rounds would "
            f"decide it (~{duration(p.needs_s or 0.0)} at this campaign's pace; --until-decided --max-runs "
            f"{p.needs_runs})")
