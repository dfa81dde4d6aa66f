"""The instances study's analysis: each point's throughput and its interval from the stored
rounds, the optimum N and policy, the knee, fork masters against NUMA-bound ones, the looks of
--until-decided and the rounds to ask for (study.py plans and runs the copies)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from perflab.stats import knee, median, median_ci
from perflab.studies.instances import looks
from perflab.studies.instances.result import (
    InstancesResult,
    counter_ratio,
    ranking,
    unit_of,
    summed_metric,
    work_metric,
    Point,
    PolicyScan,
    fork_rows,
    fork_verdict,
    point_energy,
    point_throughput,
    points_of,
)
from perflab.studies.cost.energy import energy_optimal, source_of
from perflab.studies.instances import power
from perflab.studies.instances.optimum import ALPHA, MIN_ROUNDS, choose

if TYPE_CHECKING:  # study.py imports this module: the Config for the types only
    from perflab.studies.instances.study import InstancesConfig

WITHIN = 0.01  # "smallest N within 1% of the optimum"


def _key(r: Any) -> tuple:
    """A point of a round: its copies run together, so the slowest copy is the point's time."""
    return (r.params.get("policy"), r.params.get("mode"), r.params["n"])


def analyse(config: InstancesConfig, runs: Sequence[Any], ns: Sequence[int] | None = None,
            policies: Sequence[str] | None = None, cpus: int | None = None,
            stopped_by: str | None = None) -> InstancesResult:
    """Throughput per point, its CI, optimum (optimum.py) and knee per policy; fork rows
    and verdict. ``cpus``: copies the machine holds at once (None: unknown, no N is 'past').
    --until-decided: the points past the CPU count at the look's level (looks.py); ``stopped_by``
    'budget' or 'max-time' makes the last look spend what is left. Pure."""
    wl = config.workload
    work = work_metric(wl)
    summed = summed_metric(wl)
    scan_pts = points_of(runs, "policy")
    ns = list(ns) if ns is not None else sorted({n for _, n, _ in scan_pts})
    policies = list(policies) if policies is not None else list(dict.fromkeys(p for p, _, _ in scan_pts))
    failures: dict[str, int] = {}
    for r in runs:
        if not r.result.ok:
            reason = r.result.failure or "failed"
            failures[reason] = failures.get(reason, 0) + 1
    acc: dict[tuple[str, int], dict[str, list[float]]] = {}
    failed_pts: dict[tuple[str, int], int] = {}
    for (policy, n, _rnd), point in sorted(scan_pts.items(), key=lambda kv: kv[0][2]):
        results = [r.result for r in point]
        tp, why = point_throughput(results, work, summed)
        if tp is None:
            failed_pts[(policy, n)] = failed_pts.get((policy, n), 0) + 1
            if why and why.startswith("no "):
                failures[why] = failures.get(why, 0) + 1
            continue
        a = acc.setdefault((policy, n), {k: [] for k in ("tp", "own", "spread", "pss", "ipc", "llc",
                                                         "watts", "jpu")})
        a["tp"].append(tp)
        energy = point_energy(results, work)
        if energy is not None:
            a["watts"].append(energy[0])
            a["jpu"].append(energy[1])
        a["own"].extend(float(r.metrics[wl.primary_metric]) for r in results
                        if wl.primary_metric and wl.primary_metric in r.metrics)
        a["pss"].extend(float(r.metrics["pss_kb"]) for r in results if "pss_kb" in r.metrics)
        a["ipc"].extend(counter_ratio(results, "instructions", "cycles"))
        a["llc"].extend(counter_ratio(results, "LLC-load-misses", work))
        spread = results[0].health.get("start_spread_ns")
        if spread is not None:
            a["spread"].append(float(spread))
    seq = _sequential(config, acc, policies, cpus, runs, stopped_by) if config.until_decided else None
    scans = [_scan(p, ns, acc, failed_pts, cpus, seq[1].get(p) if seq else None) for p in policies]
    done = [s for s in scans if s.optimum_n is not None]
    best = max(done, key=lambda s: s.optimum_throughput) if done else None  # type: ignore[arg-type, return-value]  # set with optimum_n
    fork = fork_rows(ns, points_of(runs, "mode"), work) if config.fork_master else None
    notes = []
    if failures:
        notes.append(f"{sum(failures.values())} runs failed or gave no result and are left out: "
                     + ", ".join(f"{k} x{v}" for k, v in failures.items()))
    energy_n = None
    if best is not None:
        points = {p.n: (p.throughput, p.watts) for p in best.points
                  if p.throughput is not None and p.watts is not None}
        energy_n = energy_optimal(points)
    measured = [r.result for r in runs if r.result.energy]
    rounds = 1 + max((int(r.params["round"]) for r in runs), default=-1)
    if seq is None:
        rounds_needed, asked = _ask(scans, ns, cpus, config.reps)
    else:
        plan_, _, open_ = seq
        per_round = round_s(runs)
        looks.settle(plan_, open_, config.min_effect, rounds, per_round)
        plan_.extra["compared"] = sum(len(v) for v in seq[1].values())
        rounds_needed, asked = plan_.needs_runs, looks.sentence(plan_, rounds, config.min_effect)
    reps = rounds if config.until_decided else config.reps
    return InstancesResult(
        sequential=seq[0].as_dict() if seq else None, min_effect=config.min_effect if seq else 0.0,
        rounds_needed=rounds_needed, asked=asked,
        energy_source=source_of(measured) if measured else None, energy_optimum_n=energy_n,
        unit=unit_of(wl), ns=list(ns), scans=scans, optimum_n=best.optimum_n if best else None,
        optimum_throughput=best.optimum_throughput if best else None,
        optimum_policy=best.policy if best else None, own_metric=wl.primary_metric,
        fork=fork, fork_verdict=fork_verdict(fork) if fork else None, failures=failures, notes=notes,
        level=median_ci(range(reps)).level, reps=reps, cpus=cpus, ranked_by=ranking(wl),
        own_higher_is_better=wl.higher_is_better, summed=summed is not None,
    )


def _ask(scans: Sequence[PolicyScan], ns: Sequence[int], cpus: int | None, reps: int) -> tuple[int | None, str]:
    """(rounds asked for, why) where the rounds ran at two speeds and no scan found a gain past
    the CPU count: the rounds that would compare within the speeds (power.py); (None, '') else."""
    if any(s.kind == "past" and s.significant for scan in scans for s in scan.steps):
        return None, ""
    seen = power.two_speeds([p.samples for scan in scans for p in scan.points if p.samples])
    if seen is None:
        return None, ""
    past = sum(1 for n in ns if cpus is not None and n > cpus)
    need = power.rounds_needed(seen, past, ALPHA)
    if need <= reps:
        return None, ""
    return need, power.sentence(seen, reps, need, past > 0)


def round_s(runs: Sequence[Any]) -> float:
    """A round's time at this campaign's pace: each point's slowest copy, the median over rounds."""
    per: dict[int, dict[tuple, float]] = {}
    for r in runs:
        pts = per.setdefault(int(r.params["round"]), {})
        pts[_key(r)] = max(pts.get(_key(r), 0.0), r.result.wall_ns / 1e9)
    return median([sum(p.values()) for p in per.values()]) if per else 0.0


def _sequential(config: InstancesConfig, acc, policies: Sequence[str], cpus: int | None, runs: Sequence[Any],
                stopped_by: str | None):
    """--until-decided at the rounds measured: (the design's Plan, policy -> {N past the CPU count:
    (decision, ratio, CI)}, the undecided ones' (ratio, CI))."""
    samples = {p: {n: a["tp"] for (q, n), a in acc.items() if q == p} for p in policies}
    pairs = {p: looks.past_pairs(samples[p], cpus, MIN_ROUNDS) for p in policies}
    k = sum(len(v) for v in pairs.values())
    rounds = 1 + max((int(r.params["round"]) for r in runs), default=-1)
    first = round_s([r for r in runs if int(r.params["round"]) == 0])
    limit = looks.budget(config, first)
    spent = sum(round_s([r for r in runs if int(r.params["round"]) == i]) for i in range(rounds))
    final = (stopped_by in ("budget", "max-time") or rounds >= limit
             or (stopped_by is None and config.max_time is not None and spent >= config.max_time))
    plan_ = looks.plan_at(config, max(rounds, 2), limit, k, final)
    decided = {p: looks.decide_past(samples[p], pairs[p], plan_.level, config.min_effect) for p in policies}
    open_ = [(ratio, ci) for d in decided.values() for dec, ratio, ci, _ in d.values() if not dec]
    return plan_, decided, open_


def _scan(policy: str, ns: Sequence[int], acc, failed_pts, cpus: int | None,
          decided: dict | None = None) -> PolicyScan:
    points: list[Point] = []
    prev: Point | None = None
    for n in ns:
        a = acc.get((policy, n))
        failed = failed_pts.get((policy, n), 0)
        if not a:
            points.append(Point(n, None, None, None, 0, failed))
            continue
        xs = a["tp"]
        t = median(xs)
        gain = None if prev is None else (t - prev.throughput) / (n - prev.n)
        # one round is no interval: "x (x-x), 0 %" claimed evidence that was not there
        pt = Point(n, t, median_ci(xs) if len(xs) > 1 else None, t / n, len(xs), failed, gain,
                   median(a["own"]) if a["own"] else None,
                   median(a["spread"]) / 1e3 if a["spread"] else None, list(xs),
                   median(a["pss"]) if a["pss"] else None, median(a["ipc"]) if a["ipc"] else None,
                   median(a["llc"]) if a["llc"] else None,
                   median(a["watts"]) if a["watts"] else None, median(a["jpu"]) if a["jpu"] else None)
        points.append(pt)
        prev = pt
    ok = [p for p in points if p.throughput is not None]
    if not ok:
        return PolicyScan(policy, points, None, None, None, reason="every point failed")
    # The ignores: `ok` holds only points with a throughput, which mypy cannot carry through a list.
    top = max(ok, key=lambda p: p.throughput)  # type: ignore[arg-type, return-value]  # see above
    within = min((p for p in ok if p.throughput >= (1 - WITHIN) * top.throughput), key=lambda p: p.n)  # type: ignore[operator]  # see above
    # Every repetition is a point of the fit, so 4 values of N with 3 reps are enough for a knee.
    xs = [float(p.n) for p in ok for _ in p.samples]
    ys = [x for p in ok for x in p.samples]
    k = knee(xs, ys) if len(set(xs)) >= 3 else None
    choice = choose({p.n: p.samples for p in ok}, cpus, decided=decided)
    at = next((p for p in ok if p.n == choice.optimum_n), None)
    return PolicyScan(policy, points, choice.optimum_n, at.throughput if at else None, within.n,
                      knee_n=None if k is None else k.x, best_n=choice.best_n, top_n=top.n,
                      steps=choice.steps, reason=choice.reason)
