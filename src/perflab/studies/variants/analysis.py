"""The verdict of a variants campaign from its stored runs (study.py's module docstring: the
method): each quantity of each variant against the baseline, paired by round, Holm across the
variants; at each look of --until-decided, the same comparisons at the look's level."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from perflab.model import RunResult
from perflab.stats import cliffs_delta, holm, median, median_ci
from perflab.stats.sequential import decide
from perflab.stats.shift import paired_ratio_ci
from perflab.stats.speeds import paired_line, same_speed, worth_looking
from perflab.studies.cost.energy import events_metric, run_joules, summarise
from perflab.kernels.variants import resolve_baseline
from perflab.studies.variants import looks, power
from perflab.studies.variants.counts import analyse_counts, counts_verdict
from perflab.studies.variants.result import (
    BuildInfo, Comparison, Estimate, VariantOutcome, VariantsResult, candidates, leader_of, verdicts,
)

if TYPE_CHECKING:
    from perflab.studies.variants.study import VariantsConfig


def _runs(runs: Sequence[Any]) -> list[tuple[dict, RunResult]]:
    """(params, result) pairs from stored Measurements or from pairs already."""
    return [(r.params, r.result) if hasattr(r, "result") else (r[0], r[1]) for r in runs]


def _quantities(config: VariantsConfig, energy: bool = False) -> list[tuple[str, bool]]:
    """(quantity, higher is better): elapsed, max RSS, the workload's primary metric, and the
    joules of a run where a meter counted them."""
    q = [("wall_s", False), ("maxrss_kb", False)]
    if config.workload.primary_metric:
        q.append((config.workload.primary_metric, config.workload.higher_is_better))
    if energy:
        q.append(("energy_j", False))
    return q


def _num(x: float) -> str:
    """A checksum as printed: integers without '.0', other floats in their shortest exact form."""
    return str(int(x)) if x.is_integer() else repr(x)


def _value(res: RunResult, quantity: str) -> float | None:
    if quantity == "wall_s":
        return res.wall_s
    if quantity == "maxrss_kb":
        return float(res.maxrss_kb)
    if quantity == "energy_j":
        return run_joules(res)
    return res.metrics.get(quantity)


def _pairs(a: dict[int, float], b: dict[int, float]) -> tuple[list[float], list[float], str, int] | None:
    """(a's values, b's values, the speeds line, rounds where both ran) of the rounds paired:
    those where both ran, and under two speeds only those whose two runs fell at one speed."""
    rounds = sorted(set(a) & set(b))
    if len(rounds) < 2:
        return None
    xa, xb = [a[r] for r in rounds], [b[r] for r in rounds]
    if min(xa + xb) <= 0:
        return None  # a zero or negative value: no ratio to speak of
    speeds = ""
    if worth_looking(xa) or worth_looking(xb):
        # Like with like: a round whose two runs fell at different speeds holds the gap between
        # the speeds, not the change (stats.speeds); only rounds at one speed are paired.
        kept, _ = same_speed(xa, xb)
        if sum(kept) >= 2 and not all(kept):
            speeds = paired_line(kept)
            xa, xb = [x for x, k in zip(xa, kept) if k], [x for x, k in zip(xb, kept) if k]
    return xa, xb, speeds, len(rounds)


def _compare(q: str, higher: bool, a: dict[int, float], b: dict[int, float], level: float) -> Comparison | None:
    """Variant vs baseline in the rounds where both ran: paired, so drift between rounds cancels."""
    paired = _pairs(a, b)
    if paired is None:
        return None
    xa, xb, speeds, _ = paired
    try:
        ratio, ci, p = paired_ratio_ci(xa, xb, level)
    except ValueError:
        return None
    return Comparison(q, ratio, ci, p_raw=p, p=1.0, effect=cliffs_delta(xa, xb), significant=False,
                      higher_is_better=higher, pairs=len(xa), speeds=speeds)


def analyse(config: VariantsConfig, runs: Sequence[Any], builds: Mapping[str, BuildInfo] | None = None,
            stopped_by: str | None = None) -> VariantsResult:
    """Per variant: medians with CIs, failures, checksum; against the baseline: one Comparison per
    quantity. --until-decided: each at its look's level (looks.py); ``stopped_by`` ('budget',
    'max-time': the last look spends what is left; 'look', 'decided': a planned look; None: read
    from the runs, the budget's end where they reach it)."""
    variants, base = resolve_baseline(config.variants, config.baseline)
    pairs = _runs(runs)
    simulated = [(p, r) for p, r in pairs if p.get("instrument")]
    pairs = [(p, r) for p, r in pairs if not p.get("instrument")]
    builds = dict(builds or {})
    by_name: dict[str, list[RunResult]] = {v.name: [] for v in variants}
    by_round: dict[str, list[tuple[int, RunResult]]] = {v.name: [] for v in variants}
    order: dict[int, list[str]] = {}
    for params, res in pairs:
        by_name.setdefault(params["variant"], []).append(res)
        by_round.setdefault(params["variant"], []).append((int(params["round"]), res))
        order.setdefault(int(params["round"]), []).append(params["variant"])
    quantities = _quantities(config, energy=any(r.energy for _, r in pairs))
    per_event = events_metric(config.workload.metrics, config.workload.primary_metric)
    csm = config.workload.checksum_metric
    outcomes: dict[str, VariantOutcome] = {}
    for v in variants:
        info = builds.get(v.name, BuildInfo())
        rs = by_name[v.name]
        ok = [r for r in rs if r.ok]
        o = VariantOutcome(v.name, v.flags_text, build=info, n_ok=len(ok),
                           failures=dict(Counter(r.failure or "failed" for r in rs if not r.ok)))
        for q, _ in quantities:
            xs = [x for x in (_value(r, q) for r in ok) if x is not None]
            if xs:
                o.estimates[q] = Estimate(median(xs), median_ci(xs, config.level))
        energy = summarise(ok, per_event)
        o.energy = energy.as_dict() if energy is not None else None
        sums = [r.metrics[csm] for r in ok if csm and csm in r.metrics]
        if sums:
            counts = Counter(sums)
            o.checksum = counts.most_common(1)[0][0]
            if len(counts) > 1:
                o.notes.append(f"checksum varies between runs ({len(counts)} values): the output is not deterministic")
        o.notes.extend(info.notes)
        o.status = ("skipped" if info.skipped else "failed" if not ok and rs else
                    "not run" if not rs else "baseline" if v.name == base else "measured")
        outcomes[v.name] = o
    b = outcomes[base]
    others = [o for o in outcomes.values() if o.name != base and o.n_ok >= 2 and b.n_ok >= 2]
    look = _look(config, by_round, others, stopped_by) if config.until_decided else None
    for q, higher in quantities:
        per_round = {name: {rnd: x for rnd, r in rs if r.ok and (x := _value(r, q)) is not None}
                     for name, rs in by_round.items()}
        level = look.level if look is not None else config.level
        comps = {o.name: _compare(q, higher, per_round[o.name], per_round[base], level) for o in others}
        made = {n: c for n, c in comps.items() if c is not None}
        names = list(made)
        if look is not None:
            for n in names:
                outcomes[n].comparisons[q] = _decided(made[n], level, config.min_effect)
            continue
        for n, p in zip(names, holm([made[n].p_raw for n in names]) if names else []):
            outcomes[n].comparisons[q] = replace(made[n], p=p, significant=p < config.alpha)
    if csm and b.checksum is not None:
        for o in outcomes.values():
            if o.name != base and o.checksum is not None and o.checksum != b.checksum:
                o.status = "different result"
                o.notes.append(f"checksum {_num(o.checksum)} differs from {base}'s {_num(b.checksum)}: "
                               f"this build changes the program's results")
    elif csm and b.n_ok:
        b.notes.append(f"no '{csm}' in the baseline's output: results could not be checked")
    metric = config.workload.primary_metric
    # a metric the program never printed cannot rank the variants: elapsed time does
    primary = metric if metric and any(metric in o.estimates for o in outcomes.values()) else "wall_s"
    higher = dict(quantities)[primary]
    result = VariantsResult(baseline=base, primary=primary, level=config.level, alpha=config.alpha,
                            rounds=len(order) if config.until_decided else config.rounds, checksum_metric=csm,
                            variants=list(outcomes.values()),
                            order=[order[k] for k in sorted(order)], higher_is_better=higher,
                            ranking=_ranking(metric, primary, higher), instrument=config.instrument,
                            cache_model=config.cache_model)
    if look is not None:
        result.min_effect, result.stopped_by = config.min_effect, stopped_by or ""
        decisions = [(c.decision, c) for o in others if (c := o.comparisons.get(primary)) is not None]
        round_s = sum(e.median for o in outcomes.values() if (e := o.estimates.get("wall_s")) is not None)
        looks.settle(look, decisions, config.min_effect, look.looks[-1].runs, round_s)
        result.sequential = look.as_dict()
    rivals = sum(o.status == "measured" for o in result.variants) - 1
    _contest(result, by_round, config.level if look is None else
             looks.plan_at(config, look.looks[-1].runs, look.budget, rivals, look.final).level,
             config.min_effect if look is not None else None)
    verdicts(result)
    if look is None:
        _rounds_asked(result, by_round, [o.name for o in others])
    if config.instrument:
        analyse_counts(result, simulated)
        result.verdict += counts_verdict(result)
    return result


def _look(config: VariantsConfig, by_round: Mapping[str, list[tuple[int, RunResult]]],
          others: Sequence[VariantOutcome], stopped_by: str | None):
    """--until-decided: the design's looks up to the rounds measured (looks.plan_at), from the
    budget the first round's pace sets."""
    rounds = 1 + max((rnd for rs in by_round.values() for rnd, _ in rs), default=-1)
    first = [r.wall_s for rs in by_round.values() for rnd, r in rs if rnd == 0]
    limit = looks.budget(config, sum(first) or 1e-6)
    spent_s = sum(r.wall_s for rs in by_round.values() for _, r in rs)
    final = (stopped_by in ("budget", "max-time") or rounds >= limit
             or (stopped_by is None and config.max_time is not None and spent_s >= config.max_time))
    return looks.plan_at(config, max(rounds, 2), limit, len(others), final)


def _decided(c: Comparison, level: float, min_effect: float) -> Comparison:
    """A comparison at a look: decided 'larger' / 'smaller' (a change of at least min_effect
    shown), 'within' (ruled out) or '' (cannot tell), by its repeated interval at the look's level
    (stats.sequential.decide); an interval that cannot reach that level decides nothing."""
    d = decide(c.ratio, c.ci.low, c.ci.high, min_effect) if c.ci.level >= level - 1e-9 else None
    return replace(c, p=c.p_raw, significant=d in ("larger", "smaller"), decision=d or "",
                   min_effect=min_effect, sequential=True)


def _rounds_asked(result: VariantsResult, by_round: Mapping[str, list[tuple[int, RunResult]]],
                  compared: Sequence[str]) -> None:
    """Where the primary comparisons were paired within two speeds and no variant was named the
    fastest: the rounds that would see power.RESOLUTION, in the verdict (power.py)."""
    q, base = result.primary, result.baseline
    within = [n for n in compared if q in result.row(n).comparisons and result.row(n).comparisons[q].speeds]
    if result.fastest is not None or not within:
        return
    values = {n: {rnd: x for rnd, r in by_round[n] if r.ok and (x := _value(r, q)) is not None}
              for n in [base, *compared]}
    diffs, paired = [], []
    for n in compared:
        got = _pairs(values[n], values[base])
        if got is not None:
            xa, xb, _, both = got
            diffs.append([math.log(x / y) for x, y in zip(xa, xb)])
            paired.append(both)
    sized = power.seen_and_needed(diffs, paired, result.alpha)
    if sized is not None and sized[1] > result.rounds:
        result.rounds_needed = sized[1]
        result.verdict += "; " + power.sentence(*sized)


def _ranking(metric: str | None, primary: str, higher: bool) -> str:
    """What the variants are ranked by, its direction, and where that came from."""
    way = "higher" if higher else "lower"
    if primary == metric:
        return f"{primary}, {way} is better (the workload's primary metric)"
    if metric:
        return f"elapsed time, lower is better (the primary metric {metric} was never printed)"
    return "elapsed time, lower is better (the workload declares no primary metric)"


def _contest(result: VariantsResult, by_round: Mapping[str, list[tuple[int, RunResult]]], level: float,
             min_effect: float | None = None) -> None:
    """The leader (best estimate among the variants better than the baseline) against every
    other variant of the same result on the primary quantity, paired by round (Wilcoxon
    signed-rank), Holm over those rivals; the leader is the fastest only where it beats each one
    (verdicts() words it). Rivals include variants not significantly better than the baseline:
    one that missed that test by chance may still be as fast as the leader."""
    cands = candidates(result)
    if not cands:
        return
    lead = leader_of(result, cands)
    rivals = [o for o in result.variants if o.status == "measured" and o.name != lead.name]
    q, higher = result.primary, result.higher_is_better
    per_round = {o.name: {rnd: x for rnd, r in by_round[o.name] if r.ok and (x := _value(r, q)) is not None}
                 for o in [lead, *rivals]}
    comps = {o.name: _compare(q, higher, per_round[lead.name], per_round[o.name], level) for o in rivals}
    made = {n: c for n, c in comps.items() if c is not None}
    names = list(made)
    result.leader = lead.name
    if min_effect is not None:  # --until-decided: the leader's repeated interval against each rival
        for n in names:
            c = made[n]
            shown = c.ci.level >= level - 1e-9 and (c.ci.low > 1.0 or c.ci.high < 1.0)
            d = decide(c.ratio, c.ci.low, c.ci.high, min_effect) if c.ci.level >= level - 1e-9 else None
            result.contest[n] = replace(c, p=c.p_raw, significant=shown, decision=d or "",
                                        min_effect=min_effect, sequential=True)
        return
    for n, p in zip(names, holm([made[n].p_raw for n in names]) if names else []):
        result.contest[n] = replace(made[n], p=p, significant=p < result.alpha)
