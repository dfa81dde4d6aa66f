"""Build variants: the same code built many ways, compared with a baseline on time, memory, result.

Seeds 000 (x32 vs x86-64 vs ia32: "physical memory -20 %, elapsed -2 %"), 002 and 003 (-O level,
LTO, PGO, -march, fast-math, library link order). Every variant is probed (buildable? runnable on
this kernel and CPU?) and built through the cache (``perflab.kernels.variant_build``), then all
are measured interleaved: each round runs every variant once in a seeded shuffled order, so
drift hits all alike. Each variant is compared with the baseline (default ``-m64 -O2``) per
quantity (elapsed, max RSS, the workload's metric), paired by round so drift cancels: Wilcoxon's
signed-rank test, Holm-corrected across the variants, and the ratio with its distribution-free
interval (Walsh averages) at its achieved level. A variant
whose output checksum differs from the baseline's is a "different result": reported, never
named the fastest (seed 003: fast-math changes floating-point results). With an instrument
(cachegrind), every variant also runs a few times simulated, and is ranked by its counts beside
its time (studies/variants/counts.py).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from perflab.errors import PerflabError
from perflab.kernels.build import BuildError
from perflab.kernels.variant_build import build_variant, pgo_unchanged
from perflab.kernels.variant_probe import default_probe
from perflab.kernels.variants import BuildTarget, Variant, VariantBuild, resolve_baseline
from perflab.measure.cachegrind import CachegrindExecutor
from perflab.model import RunResult, RunSpec, Workload
from perflab.stats import cliffs_delta, holm, median, median_ci
from perflab.stats.sequential import decide
from perflab.stats.shift import paired_ratio_ci
from perflab.stats.speeds import paired_line, same_speed, worth_looking
from perflab.studies.cost.energy import events_metric, run_joules, summarise
from perflab.studies.session import Session
from perflab.studies.variants import looks, power
from perflab.studies.variants.counts import COUNT_RUNS, analyse_counts, counts_verdict
from perflab.studies.variants.result import (
    BuildInfo, Comparison, Estimate, VariantOutcome, VariantsResult, candidates, leader_of, verdicts,
)

NAME = "variants"
# Chosen with variants_check (quiet model: 2 % log-normal noise): a 3 % speed-up is named the
# fastest in 91 % of 200 campaigns at 18 rounds, a null difference in 4 %. A two-speed, skewed or
# loaded machine needs more rounds for 3 % (docs/variants.md).
DEFAULT_ROUNDS = 18
MAX_FAILURES = 2  # a variant that fails this often is not run again (a hang costs a timeout each)

__all__ = ["NAME", "VariantsConfig", "Config", "VariantsResult", "plan", "execute", "analyse"]


def workload_dict(w: Workload) -> dict:
    """The parts of a Workload a variants campaign needs to re-plan, as JSON."""
    return {"name": w.name, "argv": list(w.argv), "metrics": [asdict(m) for m in w.metrics],
            "primary_metric": w.primary_metric, "higher_is_better": w.higher_is_better,
            "shell": w.shell, "env": dict(w.env), "cwd": w.cwd, "checksum_metric": w.checksum_metric,
            "series": [asdict(m) for m in w.series], "skip_events": w.skip_events}


def workload_from(d: Mapping[str, Any]) -> Workload:
    return Workload.from_dict(dict(d))  # workload_dict's keys are Workload fields


@dataclass(frozen=True)
class VariantsConfig:
    """What the user asked: the program, how to run it, the variants, the design and the test."""

    target: BuildTarget
    workload: Workload  # "{exe}" in argv is the variant's program (else argv[0] is replaced)
    variants: tuple[Variant, ...]
    baseline: str | None = None  # a variant name; None: the -m64 -O2 one (added if missing)
    rounds: int = DEFAULT_ROUNDS
    warmup: int = 1
    seed: int = 0
    train_argv: tuple[str, ...] = ()  # PGO training command ("{exe}" + args); default: the workload's
    train_cwd: str | None = None  # where training runs: the user's working directory
    level: float = 0.95
    alpha: float = 0.05
    timeout: float | None = None
    cache_dir: str | None = None
    jobs: int = 0  # parallel build jobs; 0: one per allowed CPU
    instrument: str = ""  # "cachegrind": COUNT_RUNS simulated runs per variant beside the timed rounds
    cache_model: str = ""  # the caches the instrument simulates (platform/cache_model.py)
    # --until-decided: rounds until each build is decided at min_effect, or the budget ends (looks.py)
    until_decided: bool = False
    min_effect: float = power.RESOLUTION  # 2 %: what the rounds it asks for under two speeds see
    min_runs: int = 10  # the first look, in rounds
    max_runs: int | None = None  # the budget in rounds (looks.DEFAULT_BUDGET where None)
    max_time: float | None = None  # seconds: the rounds it holds at the first round's pace

    def as_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d.update(target=self.target.as_dict(), workload=workload_dict(self.workload),
                 variants=[v.as_dict() for v in self.variants], train_argv=list(self.train_argv))
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "VariantsConfig":
        d = dict(d)
        d.update(target=BuildTarget.from_dict(d["target"]), workload=workload_from(d["workload"]),
                 variants=tuple(Variant.from_dict(v) for v in d["variants"]),
                 train_argv=tuple(d.get("train_argv", ())))
        return cls(**d)


Config = VariantsConfig


def plan(config: VariantsConfig, machine: Any = None) -> list[RunSpec]:
    """Warm-up rounds (negative round numbers), then the measured rounds, each in shuffled order."""
    if config.rounds < 2:
        raise PerflabError("--rounds must be at least 2 to compare variants (try --rounds 16)")
    if config.until_decided and not 0 < config.min_effect < 1:
        raise PerflabError(f"--min-effect {config.min_effect:g} is out of range: give a percentage like 1%")
    variants, _ = resolve_baseline(config.variants, config.baseline)
    names = [v.name for v in variants]
    rng = random.Random(config.seed)
    specs = []
    # --until-decided: the budget's rounds; the campaign stops at the look that decides (measure)
    rounds = (config.max_runs or looks.DEFAULT_BUDGET) if config.until_decided else config.rounds
    for rnd in range(-config.warmup, rounds):
        order = list(names)
        rng.shuffle(order)
        specs += [config.workload.spec(label=name, timeout=config.timeout,
                                       params={"variant": name, "round": rnd}) for name in order]
    # Simulated runs apart from the timed rounds: their wall time is Valgrind's, not the build's.
    for rnd in range(COUNT_RUNS if config.instrument else 0):
        order = list(names)
        rng.shuffle(order)
        specs += [config.workload.spec(label=name, timeout=config.timeout, instrument=config.instrument,
                                       params={"variant": name, "round": rnd, "instrument": config.instrument})
                  for name in order]
    return specs


def _argv(argv: Sequence[str], exe: Path) -> tuple[str, ...]:
    if any("{exe}" in a for a in argv):
        return tuple(a.replace("{exe}", str(exe)) for a in argv)
    return (str(exe), *argv[1:])


def _build_one(config: VariantsConfig, v: Variant, say) -> VariantBuild | str:
    """Probe and build one variant: its build, or the one-line reason it cannot run here."""
    p = default_probe(v, None)
    if not p.available:
        return p.reason
    try:
        vb = build_variant(config.target, v, train_argv=config.train_argv or ("{exe}", *config.workload.argv[1:]),
                           train_cwd=config.train_cwd, jobs=config.jobs,
                           cache_dir=Path(config.cache_dir) if config.cache_dir else None)
    except BuildError as exc:
        return f"cannot build: {exc}"
    p = default_probe(v, vb)
    if not p.available:
        return p.reason
    say(f"{v.name}: {'cached' if vb.cached else 'built'} ({v.flags_text})")
    for note in vb.notes:
        say(f"  {v.name}: {note}")
    return vb


def _build_all(config: VariantsConfig, variants: Sequence[Variant], base: str,
               say) -> dict[str, VariantBuild | str]:
    """Every variant's build or reason, the baseline first: nothing else is worth building without it."""
    out: dict[str, VariantBuild | str] = {}
    for v in sorted(variants, key=lambda v: v.name != base):
        out[v.name] = _build_one(config, v, say)
        if isinstance(out[v.name], VariantBuild):
            continue
        if v.name == base:
            raise PerflabError(f"the baseline '{base}' cannot be measured here: {out[base]}; "
                               f"fix its build or pick another with --baseline NAME")
        say(f"{v.name}: skipped: {out[v.name]}")
    pgo_unchanged({k: b for k, b in out.items() if isinstance(b, VariantBuild)}, variants)
    return {v.name: out[v.name] for v in variants}


def execute(config: VariantsConfig, session: Session, machine: Any = None) -> VariantsResult:
    """Build every variant, then run the plan through the session (stored as each run completes)."""
    variants, base = resolve_baseline(config.variants, config.baseline)
    if config.instrument and not isinstance(session.executor, CachegrindExecutor):
        raise PerflabError(f"this variants campaign runs under --instrument {config.instrument}, which "
                           "this executor cannot simulate: run the study again rather than resume it")
    builds = _build_all(config, variants, base, session.say)
    if not session.resumed:
        for name, vb in builds.items():
            if isinstance(vb, VariantBuild):
                session.store.add_artifact(session.campaign_id, "binary", str(vb.path),
                                           {"variant": name, "cached": vb.cached})
    failures: Counter[str] = Counter()
    specs = plan(config, machine)
    n_builds = sum(isinstance(b, VariantBuild) for b in builds.values())
    session.say(f"measuring {n_builds} variants x "
                + (f"up to {config.max_runs or looks.DEFAULT_BUDGET} rounds until decided" if config.until_decided
                   else f"{config.rounds} rounds")
                + f", interleaved in shuffled order (+{config.warmup} warm-up)"
                + (f", then {COUNT_RUNS} simulated runs each ({config.instrument})" if config.instrument else ""))

    def run_one(spec: RunSpec) -> RunResult | None:
        name, rnd = spec.params["variant"], spec.params["round"]
        vb = builds[name]
        if not isinstance(vb, VariantBuild) or failures[name] >= MAX_FAILURES:
            return None
        spec = replace(spec, argv=_argv(spec.argv, vb.path))
        if rnd < 0:
            session.warmup(spec)
            return None
        res = session.run(spec, rep=rnd)
        if not res.ok:
            failures[name] += 1
            session.say(f"{name}: round {rnd} failed: {res.failure}")
        return res

    now = session.executor.now_ns
    runs, stopped = measure(config, specs, run_one, now, session.say)
    infos = {n: BuildInfo.of(b) for n, b in builds.items()}
    return analyse(config, runs, infos, stopped_by=stopped)


def measure(config: VariantsConfig, specs: Sequence[RunSpec], run_one: Callable[[RunSpec], RunResult | None],
            now: Callable[[], int], say: Callable[[str], None] = lambda _: None,
            ) -> tuple[list[tuple[dict, RunResult]], str]:
    """The plan's runs through ``run_one`` (None: not run, or a warm-up), in order: every round,
    or with --until-decided the rounds up to the look that decides every build or the budget's
    end; then the simulated runs. (params, result) pairs and what stopped the rounds."""
    runs: list[tuple[dict, RunResult]] = []
    walls: dict[int, list[float]] = {}
    timed = [s for s in specs if not s.params.get("instrument")]
    stopped, limit, t0 = "rounds", None, now()
    for i, spec in enumerate(timed):
        res = run_one(spec)
        rnd = spec.params["round"]
        if res is not None:
            runs.append((dict(spec.params), res))
            walls.setdefault(rnd, []).append(res.wall_s)
        if not config.until_decided or rnd < 0 or (i + 1 < len(timed) and timed[i + 1].params["round"] == rnd):
            continue  # a look falls between rounds only
        rounds = rnd + 1
        if limit is None:
            limit = looks.budget(config, looks.first_round_s(walls))
        if rounds >= limit:
            stopped = "budget"
            break
        if config.max_time is not None and (now() - t0) / 1e9 >= config.max_time:
            stopped = "max-time"
            break
        compared = {p["variant"] for p, r in runs if r.ok} - {resolve_baseline(config.variants, config.baseline)[1]}
        if looks.due(config, rounds, limit, len(compared)):
            look = analyse(config, runs, stopped_by="look")
            if look.sequential and look.sequential["decided"]:
                say(f"decided after {rounds} rounds")
                stopped = "decided"
                break
    for spec in specs:
        if spec.params.get("instrument") and (res := run_one(spec)) is not None:
            runs.append((dict(spec.params), res))
    return runs, stopped


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
