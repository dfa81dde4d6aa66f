"""`perflab run --until-decided`: rounds until every comparison with the reference is decided at
--min-effect, or the budget ends (stats.sequential's design).

Every command runs in every round (shuffled per round, as always). The budget is --max-runs
runs a command, or the rounds --max-time holds at the first round's pace, whichever is fewer
(DEFAULT_BUDGET where neither is given). The looks fall at --min-runs rounds (10), then every
half as many again (stats.sequential.schedule); each comparison spends its share of 5 %
(Bonferroni over the k - 1 comparisons, as without looks) by O'Brien-Fleming-type alpha spending
over the looks, so "slower", "faster" and "no change of m or more" hold together at 5 % over
all looks. At each look every comparison's interval is the one of its look's level (a repeated
confidence interval); the runs stop at the first look where every comparison is decided: a change
of at least m shown, or ruled out by an interval inside +-m. Where the budget ends first, an
undecided comparison says so, with about the runs that would decide it and their time at this
run's pace (a round of every command at its median).

What it does not show: the levels hold for the design's looks and the rank statistic's normal
limit (Jennison & Turnbull 2000, ch. 13); a machine whose level moves between campaigns (drift
from day to day) is not averaged out by more runs of one campaign.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from perflab.stats import sequential

if TYPE_CHECKING:  # the study module imports this one
    from perflab.studies.run.study import RunConfig

DEFAULT_BUDGET = 300  # runs a command: 300 rounds of five 0.1 s commands take 2.5 minutes
DESIGN = "obf"
ALPHA = 0.05


def budget(config: RunConfig, first_round_s: float) -> int:
    """Rounds the study may take: --max-runs, and what --max-time holds at the first round's pace."""
    caps = [config.max_runs] if config.max_runs else []
    if config.max_time is not None:
        caps.append(max(2, int(config.max_time / max(first_round_s, 1e-6))))
    return max(2, min(caps) if caps else DEFAULT_BUDGET)


def capped(config: Any, first_round_s: float, default: int) -> int:
    """Rounds a campaign may take where --max-runs has a default of its own (variants,
    instances): --max-runs or ``default``, cut to what --max-time holds at the first round's pace."""
    limit = config.max_runs or default
    if config.max_time is not None:
        limit = min(limit, int(config.max_time / max(first_round_s, 1e-6)))
    return max(2, limit)


def due(config: RunConfig, rounds: int, limit: int, comparisons: int) -> bool:
    """Whether a look that could decide falls after ``rounds`` rounds of a budget of ``limit``
    (O'Brien-Fleming's first looks spend next to nothing: no interval of so few runs reaches them)."""
    alpha = ALPHA / max(1, comparisons)
    return any(lk.runs == rounds and lk.level < 1.0 - 1e-9
               for lk in sequential.planned(max(config.min_runs, 2), limit, alpha, DESIGN))


@dataclass
class Plan:
    """Where a sequential run stands: its looks so far, the level of the last, the budget."""

    looks: list[sequential.Look]
    budget: int
    alpha: float  # each comparison's share
    final: bool  # the budget ended (the last look spent what was left)
    decided: bool = False
    needs_runs: int | None = None
    needs_s: float | None = None
    extra: dict = field(default_factory=dict)

    @property
    def level(self) -> float:
        # a look that spends nothing asks for certainty, which no interval of runs reaches
        return min(self.looks[-1].level, 1.0 - 1e-12)

    def as_dict(self) -> dict:
        return {"design": "O'Brien-Fleming-type alpha spending (Lan-DeMets)", "alpha": ALPHA,
                "alpha_each": self.alpha, "budget": self.budget, "final": self.final,
                "looks": [lk.as_dict() for lk in self.looks], "decided": self.decided,
                "needs_runs": self.needs_runs, "needs_s": self.needs_s}


def plan_at(config: RunConfig, runs: Sequence[Any], comparisons: int, stopped_by: str) -> Plan | None:
    """The design's looks up to the rounds ``runs`` hold (each command's runs, failed or not,
    the fewest of them), from the budget their first round sets; None before any round."""
    by_label: dict[str, list[Any]] = {}
    for r in runs:
        by_label.setdefault(r.label, []).append(r)
    if not by_label:
        return None
    first_round_s = sum(min(rs, key=lambda r: int(r.rep)).result.wall_ns / 1e9 for rs in by_label.values())
    limit = budget(config, first_round_s)
    rounds = min(len(rs) for rs in by_label.values())
    final = rounds >= limit or stopped_by in ("max-time", "budget")
    alpha = ALPHA / max(1, comparisons)
    first = max(config.min_runs, 2)
    return Plan(sequential.design_at(first, limit, rounds, alpha, final, DESIGN), limit, alpha, final)


def settle(p: Plan, benches: Sequence[Any]) -> None:
    """Whether every comparison is decided; where the budget ended first, the runs a command
    that would decide the least decided one, and their time at this run's pace."""
    rel = [b.relative for b in benches if b.relative and not b.relative.get("reference")]
    p.decided = bool(rel) and all(r.get("decision") for r in rel)
    if p.decided or not p.final:
        return
    n = p.looks[-1].runs
    needs = [sequential.runs_needed(n, r["ratio"], r["low"], r["high"], r["min_effect"])
             for r in rel if not r.get("decision") and all(_finite(r[k]) for k in ("ratio", "low", "high"))]
    p.needs_runs = max(needs) if needs else 2 * n
    per_round = sum(b.summary["median"] for b in benches if b.summary)
    p.needs_s = p.needs_runs * per_round


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v) and v > 0
