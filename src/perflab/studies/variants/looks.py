"""`perflab variants --until-decided`: rounds of every build until each build's comparison with
the baseline is decided at --min-effect, or the budget ends (stats.sequential's design, as
`perflab run --until-decided` uses it: studies/run/looks.py).

Every build runs once in every round (shuffled per round, as always), so a round is a pair for
each comparison. The budget is --max-runs rounds (DEFAULT_BUDGET where not given), cut to the
rounds --max-time holds at the first round's pace. The looks fall at --min-runs rounds (10), then
every half as many again (stats.sequential.schedule). Each build's comparison on the primary
quantity spends its share of alpha (Bonferroni over the k builds compared, the correction the
paired design bears without knowing which builds differ) by O'Brien-Fleming-type alpha spending
over the looks; at a look its interval is the paired Hodges-Lehmann one (Walsh averages) at the
look's level, a repeated confidence interval, so "faster", "slower" and "no change of m or more"
hold together at alpha over all looks and builds. The rounds stop at the first look where every
comparison is decided; where the budget ends first, an undecided comparison reads "cannot tell",
with about the rounds that would decide it and their time at this campaign's pace.

What it does not show: the levels hold for the design's looks and the signed-rank statistic's
normal limit (Jennison & Turnbull 2000, ch. 13); a machine whose speed moves between campaigns is
not averaged out by more rounds of one campaign.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from perflab.stats import sequential
from perflab.studies.run import looks as run_looks
from perflab.studies.run.looks import Plan

if TYPE_CHECKING:  # the study module imports this one
    from perflab.studies.variants.study import VariantsConfig

DEFAULT_BUDGET = 300  # rounds: 300 rounds of four 0.1 s builds take 2 minutes
DESIGN = "obf"


def budget(config: VariantsConfig, first_round_s: float) -> int:
    """Rounds the campaign may take: --max-runs (DEFAULT_BUDGET), cut to what --max-time holds at
    the first round's pace."""
    return run_looks.capped(config, first_round_s, DEFAULT_BUDGET)


def first(config: VariantsConfig) -> int:
    return max(config.min_runs, 2)


def alpha_each(config: VariantsConfig, comparisons: int) -> float:
    return config.alpha / max(1, comparisons)


def due(config: VariantsConfig, rounds: int, limit: int, comparisons: int) -> bool:
    """Whether a look that could decide falls after ``rounds`` rounds of a budget of ``limit``."""
    return any(lk.runs == rounds and lk.level < 1.0 - 1e-9
               for lk in sequential.planned(first(config), limit, alpha_each(config, comparisons), DESIGN))


def plan_at(config: VariantsConfig, rounds: int, limit: int, comparisons: int, final: bool) -> Plan:
    """The design's looks up to ``rounds`` of a budget of ``limit`` rounds; ``final``: the budget
    ended (or --max-time cut it), so this look spends what is left."""
    a = alpha_each(config, comparisons)
    final = final or rounds >= limit
    looks = sequential.design_at(first(config), limit, min(rounds, limit) if final else rounds, a, final, DESIGN)
    return Plan(looks, limit, a, final)


def contest_level(config: VariantsConfig, rounds: int, limit: int, rivals: int, final: bool) -> float:
    """The repeated-interval level of the leader against each rival at this look (Bonferroni over
    the rivals, spent over the same looks)."""
    p = plan_at(config, rounds, limit, rivals, final)
    return p.level


def first_round_s(walls: Mapping[int, Sequence[float]]) -> float:
    """The first measured round's time: every build's run in it (failed or not, it took that long)."""
    return sum(walls.get(0, ())) or 1e-6


def settle(p: Plan, decisions: Sequence[tuple[str, Any]], min_effect: float, rounds: int,
           per_round_s: float) -> None:
    """Whether every comparison is decided; where the budget ended first, the rounds that would
    decide the least decided one, and their time at this campaign's pace. ``decisions``: each
    compared build's (decision or '', its Comparison)."""
    p.decided = bool(decisions) and all(d for d, _ in decisions)
    if p.decided or not p.final:
        return
    needs = [sequential.runs_needed(rounds, c.ratio, c.ci.low, c.ci.high, min_effect)
             for d, c in decisions if not d and c is not None
             and all(math.isfinite(v) and v > 0 for v in (c.ratio, c.ci.low, c.ci.high))]
    p.needs_runs = max(needs) if needs else 2 * rounds
    p.needs_s = p.needs_runs * per_round_s
