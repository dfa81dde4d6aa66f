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
from perflab.studies.session import Session
from perflab.studies.variants import looks, power
from perflab.studies.variants.counts import COUNT_RUNS
from perflab.studies.variants.analysis import analyse
from perflab.studies.variants.result import (
    BuildInfo, VariantsResult,
)

NAME = "variants"
# Chosen with checks/variants.py (quiet model: 2 % log-normal noise): a 3 % speed-up is named the
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
