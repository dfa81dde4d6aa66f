"""`perflab run --baseline NAME --fail-if 'median>+3%' --until-decided`: new runs in looks until
the gate's question is decided against the stored baseline, or the budget ends.

The baseline is a stored campaign: its m runs of a command are fixed, and the new runs grow round
by round. At each look (at --min-runs runs, then every half as many again, to the budget:
--max-runs, 300 by default, or what --max-time holds at the first round's pace) each gated
comparison, a --fail-if threshold on one command's measure, gets the ratio B/A of the new runs
to the baseline's (Hodges-Lehmann with Moses' interval; within the speeds where the pooled runs
run at two, stats.speeds) at the look's level: a repeated confidence interval. The levels come
from O'Brien-Fleming-type alpha spending at the information fraction I(n)/I(N), I(n) = 1/(1/n +
1/m) (stats.sequential: one side fixed); each comparison spends alpha / k of the gate's 5 %
(Bonferroni over the k gated comparisons; half of that where the baseline's history adds the
gate's campaign-level checks, which take the other half once, at the stop). A threshold
'median>+3%' is then:

- ``fails``: the interval lies above 1 and the ratio is beyond +3 % (a regression shown: FAIL);
- ``ruled out``: the interval's top is within +3 % (no increase of 3 % or more, at the stated
  level: pass);
- ``''``: undecided; the runs go on, and where the budget ends first the gate cannot pass
  (UNSURE), with about the runs that would decide it.

A threshold the other way ('events_per_s<-3%') is the mirror image. The runs stop at the first
look where every comparison is decided, or one fails (the gate's answer is then known).

What it does not show: a level shift between the baseline's campaign and this one (another day,
another neighbour on the host) is a real difference of the two campaigns, which more runs of
this one narrow the interval around rather than remove; and the baseline's own m runs bound the
interval's width: where they are too few, no number of new runs decides, and the answer says so.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Sequence

from perflab.stats import median, sequential
from perflab.stats.speeds import within_speeds, worth_looking
from perflab.studies.compare.keys import observation
from perflab.studies.run import looks

FAILS, RULED_OUT = "fails", "ruled out"


@dataclass(frozen=True)
class Against:
    """One gated comparison: a command's measure against the baseline's runs of it, at a threshold."""

    command: str  # the command's label (its runs' label)
    point: str  # the design point as the gate names it (studies.compare.keys.design_key's text)
    measure: str  # 'wall_s', 'user_s', 'maxrss_kb', 'metric:NAME' (studies.compare.keys)
    threshold: str  # the --fail-if text
    op: str  # '>' fails on an increase, '<' on a decrease
    limit: float  # the threshold as a share of the baseline's median, signed (0.03, -0.03)
    baseline: tuple[float, ...]  # the baseline's runs of the measure
    # the baseline's saves measure the drift between campaigns: the gate takes the campaign as the
    # unit (studies.gate.study), which more runs of this one do not narrow, so no look decides it
    drift: bool = False

    @classmethod
    def from_dict(cls, d: dict) -> "Against":
        return cls(d["command"], d["point"], d["measure"], d["threshold"], d["op"], float(d["limit"]),
                   tuple(float(x) for x in d["baseline"]), bool(d.get("drift")))


@dataclass(frozen=True)
class Gated:
    """The gate the looks decide: the baseline (name, campaign) and each gated comparison."""

    baseline: str
    campaign: int
    against: tuple[Against, ...]
    alpha: float = 0.05
    history: bool = False  # the baseline's saves add the gate's campaign-level checks

    @property
    def alpha_each(self) -> float:
        return self.alpha / (2 if self.history else 1) / max(1, len(self.against))

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Gated":
        return cls(d["baseline"], int(d["campaign"]), tuple(Against.from_dict(a) for a in d["against"]),
                   float(d.get("alpha", 0.05)), bool(d.get("history")))


def values(runs: Sequence[Any], command: str, measure: str) -> list[float]:
    """The command's successful runs' values of ``measure``, in run order (compare's observation)."""
    out = []
    for r in sorted((r for r in runs if r.label == command and r.result.ok), key=lambda r: int(r.rep)):
        v = observation([r.result]).get(measure)
        if v is not None:
            out.append(v)
    return out


def decision(ratio: float, low: float, high: float, op: str, limit: float) -> str:
    """FAILS (beyond the threshold, the interval on its side of 1), RULED_OUT (the interval's far
    end within it) or '' (undecided)."""
    if not all(math.isfinite(v) and v > 0 for v in (ratio, low, high)):
        return ""
    edge = 1.0 + limit
    if op == ">":
        if low > 1.0 and ratio > edge:
            return FAILS
        return RULED_OUT if high <= edge else ""
    if high < 1.0 and ratio < edge:
        return FAILS
    return RULED_OUT if low >= edge else ""


def runs_needed(n: int, m: int, ratio: float, low: float, high: float, op: str, limit: float) -> int | None:
    """About how many new runs would decide an open comparison of n new runs against m fixed ones:
    the interval's half-width goes as sqrt(1/n + 1/m); shown once the side towards 1 is shorter
    than the log ratio's distance from 1 (where the ratio is beyond the threshold), ruled out once
    the far side is shorter than its distance to the threshold (half the threshold's where the ratio
    is at or past it); the cheaper. None where even unlimited new runs would not: the baseline's
    own runs leave the interval too wide. An estimate, not a promise."""
    if n < 1 or m < 1 or not all(math.isfinite(v) and v > 0 for v in (ratio, low, high)) or high <= low:
        return None
    d, lim = math.log(ratio), math.log1p(limit)
    below, above = d - math.log(low), math.log(high) - d
    if op == "<":  # mirrored: the threshold above 1
        d, lim, below, above = -d, -lim, above, below
    # the share of today's variance at which each answer is reached
    shown = (d / below) ** 2 if d > lim and below > 0 else 0.0
    ruled = (max(lim - d, lim / 2.0) / above) ** 2 if above > 0 else math.inf
    share = max(shown, ruled)
    if share >= 1.0:
        return n + 1
    inverse = share * (1.0 / n + 1.0 / m) - 1.0 / m
    if inverse <= 0:
        return None
    return max(n + 1, math.ceil(round(1.0 / inverse, 6)))


def due(config: Any, rounds: int, limit: int) -> bool:
    """Whether a look that could decide falls after ``rounds`` rounds of a budget of ``limit``."""
    gate: Gated = config.gate
    first = max(config.min_runs, 2)
    if all(a.drift for a in gate.against):
        return rounds >= first  # nothing for the looks to decide: the first look stops
    return any(lk.runs == rounds and lk.level < 1.0 - 1e-9
               for a in gate.against if not a.drift
               for lk in sequential.planned(first, limit, gate.alpha_each, looks.DESIGN, len(a.baseline)))


def next_look(config: Any, done: int, limit: int) -> int:
    """The rounds of the next planned look after ``done`` (the budget's end at the latest)."""
    return next((n for n in sequential.schedule(max(config.min_runs, 2), limit) if n > done), limit)


def look(config: Any, runs: Sequence[Any], stopped_by: str) -> dict | None:
    """The gate's comparisons at the rounds ``runs`` hold: each one's repeated interval at its
    look's level and decision, whether all are decided (or one failed), and, where the budget
    ended first, the runs that would decide the least decided one. None before any round."""
    gate: Gated = config.gate
    labels = {r.label for r in runs}
    if not labels:
        return None
    by_label: dict[str, list[Any]] = {}
    for r in runs:
        by_label.setdefault(r.label, []).append(r)
    first_round_s = sum(min(rs, key=lambda r: int(r.rep)).result.wall_ns / 1e9 for rs in by_label.values())
    limit = looks.budget(config, first_round_s)
    rounds = min(len(rs) for rs in by_label.values())
    final = rounds >= limit or stopped_by in ("max-time", "budget")
    first = max(config.min_runs, 2)
    comparisons, design = [], []
    for a in gate.against:
        m = len(a.baseline)
        design = sequential.design_at(first, limit, rounds, gate.alpha_each, final, looks.DESIGN, m)
        level = min(design[-1].level, 1.0 - 1e-12)
        b = values(runs, a.command, a.measure)
        row: dict[str, Any] = {"command": a.command, "point": a.point, "measure": a.measure, "threshold": a.threshold,
                               "op": a.op, "limit": a.limit, "n_a": m, "n_b": len(b), "target": level,
                               "decision": "", "ratio": None, "low": None, "high": None, "level": None,
                               "fraction": design[-1].fraction, "needs_runs": None, "speeds": "",
                               "campaign": a.drift}
        if a.drift:  # left to the gate's drift test at the stop
            comparisons.append(row)
            continue
        if len(b) >= 2 and all(0 < x < math.inf for x in (*a.baseline, *b)):
            w = within_speeds(a.baseline, b, level=level, with_p=False,
                              look=worth_looking(list(a.baseline)) or worth_looking(b),
                              higher_is_better=a.op == "<")
            reached = w.level >= level - 1e-9 and not w.undecided
            row.update(ratio=w.ratio, low=w.low, high=w.high, level=w.level, speeds=w.line() if w.two else "",
                       decision=decision(w.ratio, w.low, w.high, a.op, a.limit) if reached else "")
        comparisons.append(row)
    failed = any(c["decision"] == FAILS for c in comparisons)
    decided = failed or all(c["decision"] or c["campaign"] for c in comparisons)
    out = {"design": "O'Brien-Fleming-type alpha spending (Lan-DeMets) at the information fraction "
                     "against the fixed baseline", "gate": gate.baseline, "baseline_campaign": gate.campaign,
           "alpha": gate.alpha, "alpha_each": gate.alpha_each, "budget": limit, "final": final,
           "looks": [lk.as_dict() for lk in design], "decided": decided, "failed": failed,
           "comparisons": comparisons, "needs_runs": None, "needs_s": None}
    if decided or not final:
        return out
    open_ = [c for c in comparisons if not c["decision"] and not c["campaign"]]
    needs = []
    for c in open_:
        if c["ratio"] is None:
            needs.append(2 * rounds)
            continue
        c["needs_runs"] = runs_needed(rounds, c["n_a"], c["ratio"], c["low"], c["high"], c["op"], c["limit"])
        needs.append(c["needs_runs"])
    if None in needs:
        out["needs_runs"] = None  # no number of new runs decides: the baseline's runs are too few
        out["baseline_too_few"] = True
    else:
        out["needs_runs"] = max(needs)
        per_round = sum(median([r.result.wall_ns / 1e9 for r in rs]) for rs in by_label.values())
        out["needs_s"] = out["needs_runs"] * per_round
    return out
