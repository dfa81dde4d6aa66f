"""`perflab run`: time one or more commands hyperfine-style; medians with order-statistic CIs
and relative speed, every run stored as it completes.

Scheduling: warm-up runs first, then rounds; each round runs every still-active benchmark once,
in an order shuffled per round (seeded), so slow drift of the machine hits all commands alike.
Where the first rounds show two speeds, no command runs on alone after another stopped: every
one runs in every round to the last one's stop (studies/run/order.py), so all meet the same speeds.
A benchmark stops after ``runs`` runs, or (adaptive ``precision``) when the CI of its median lies
within +-precision of the median, bounded by min/max runs and max time. A failed run stops the
study unless ``ignore_failure``; it is stored either way and left out of every statistic.
"""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import asdict, dataclass
from itertools import product
from typing import Any, Iterable

from perflab.errors import PerflabError
from perflab.model import MetricPattern, RunResult, RunSpec, known_fields
from perflab.platform.machine import Machine
from perflab.stats.interval import median_ci
from perflab.studies import instrument
from perflab.studies.cost.energy import events_metric, summarise
from perflab.studies.run.compare import (CV_WARN, MIN_EFFECT, compare, precise, precision_missed, ranked_values, ranking,
                                         two_speeds, two_speeds_line)
from perflab.studies.run import gated, looks
from perflab.studies.run.machine_notes import cpu_times, machine_notes
from perflab.studies.run.order import interleave_note, rounds_ahead, two_speeds_seen
from perflab.studies.run.result import Benchmark, Run, RunStudyResult, health_summary
from perflab.studies.run.series import profile_target, series_of
from perflab.studies.session import Session
from perflab.stats import mad_outliers

NAME = "run"
DEFAULT_TIME_BUDGET_S = 3.0  # hyperfine's default: at least 10 runs and at least 3 s


@dataclass(frozen=True)
class Command:
    """One command to time: its display name (with {param} placeholders) and argv."""

    name: str
    argv: tuple[str, ...]
    shell: bool = False


@dataclass(frozen=True)
class RunConfig:
    """What the user asked `perflab run` to time, and how long."""

    commands: tuple[Command, ...]
    metrics: tuple[MetricPattern, ...] = ()
    primary_metric: str | None = None
    # The primary metric's direction as the workload declares it (compare reads it back from the
    # stored config; None where no workload says).
    higher_is_better: bool | None = None
    warmup: int = 0
    runs: int | None = None  # fixed number of runs per benchmark
    precision: float | None = None  # adaptive: CI of the median within +-precision (0.01 = 1%)
    min_runs: int = 10
    max_runs: int | None = None
    max_time: float | None = None  # seconds for the measured phase
    seed: int = 0
    # the label the others are compared with; None: the first command (studies/run/compare.py)
    reference: str | None = None
    parameters: tuple[tuple[str, tuple[str, ...]], ...] = ()
    cpus: tuple[int, ...] | None = None
    perf_stat: bool = False
    timeout: float | None = None
    ignore_failure: bool = False
    prepare: str | None = None  # shell command run before every timed run
    workload: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    instrument: str = ""  # "" (time, rusage) or "cachegrind" (measure/cachegrind.py)
    cache_model: str = ""  # the caches the instrument simulates (platform/cache_model.py)
    series: tuple[MetricPattern, ...] = ()  # per-event lines (measure/series.py)
    skip_events: int | None = None  # the warm-up as a count of events; None: a change point finds it
    # rounds until every comparison is decided at min_effect, or the budget ends (run/looks.py)
    until_decided: bool = False
    min_effect: float = MIN_EFFECT
    # --until-decided with --baseline: the gate's comparisons the looks decide (run/gated.py)
    gate: gated.Gated | None = None

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "RunConfig":
        kw = known_fields(cls, d)
        kw["commands"] = tuple(Command(c["name"], tuple(c["argv"]), bool(c.get("shell")))
                               for c in d.get("commands", ()))
        kw["metrics"], kw["series"] = (tuple(MetricPattern(**m) for m in d.get(k, ())) for k in ("metrics", "series"))
        kw["parameters"] = tuple((p[0], tuple(p[1])) for p in d.get("parameters", ()))
        kw["env"] = tuple((e[0], e[1]) for e in d.get("env", ()))
        if kw.get("cpus") is not None:
            kw["cpus"] = tuple(kw["cpus"])
        if kw.get("gate") is not None:
            kw["gate"] = gated.Gated.from_dict(kw["gate"])
        return cls(**kw)


Config = RunConfig


Result = RunStudyResult


def _substitute(text: str, params: dict[str, str]) -> str:
    for name, value in params.items():
        text = text.replace("{" + name + "}", value)
    return text


def plan(config: RunConfig, machine: Machine | None = None) -> list[RunSpec]:
    """Commands x parameter combinations -> one RunSpec per benchmark (its label is unique)."""
    names = [p[0] for p in config.parameters]
    combos = list(product(*[p[1] for p in config.parameters])) or [()]
    events: tuple[str, ...] | None = () if config.perf_stat else None
    specs: list[RunSpec] = []
    seen: dict[str, int] = {}
    for cmd in config.commands:
        for combo in combos:
            params = dict(zip(names, combo))
            label = _substitute(cmd.name, params)
            # A name without the placeholders (a named workload, --command-name) still shows the
            # values, as the user gave them, rather than a bare "#2".
            hidden = [f"{k}={v}" for k, v in params.items() if "{" + k + "}" not in cmd.name]
            if hidden:
                label = f"{label} ({', '.join(hidden)})"
            # The resume key is (label, params, rep): the same command given twice needs its own.
            seen[label] = seen.get(label, 0) + 1
            if seen[label] > 1:
                label = f"{label} #{seen[label]}"
            specs.append(RunSpec(
                argv=tuple(_substitute(a, params) for a in cmd.argv), shell=cmd.shell,
                cpus=config.cpus, timeout=config.timeout, metrics=config.metrics,
                perf_events=events, label=label, params=params,
                capture_output=bool(config.metrics or config.series), env=dict(config.env) or None,
                cwd=config.cwd, instrument=config.instrument, series=config.series, skip_events=config.skip_events,
            ))
    return specs


def describe_failure(result: RunResult, timeout: float | None = None) -> str:
    """'exited with status 3', 'was killed by signal 11 (SIGSEGV)', 'timed out after 2 s'."""
    if result.timed_out:
        return f"timed out after {timeout:g} s and was killed" if timeout else "timed out"
    if result.signal is not None:
        import signal

        try:
            name = signal.Signals(result.signal).name
        except ValueError:
            name = "unknown"
        return f"was killed by signal {result.signal} ({name})"
    return f"exited with status {result.exit_code}"


def _failure_error(label: str, result: RunResult, timeout: float | None) -> PerflabError:
    last = next((ln.strip() for ln in reversed(result.stderr_tail.splitlines()) if ln.strip()), "")
    tail = f" (stderr: {last})" if last else ""
    fix = ("raise --timeout or make the command faster" if result.timed_out
           else "fix the command or pass --ignore-failure")
    return PerflabError(f"command '{label}' {describe_failure(result, timeout)}{tail}: {fix}")


def _prepare(config: RunConfig) -> RunSpec | None:
    if not config.prepare:
        return None
    return RunSpec(argv=(config.prepare,), shell=True, timeout=config.timeout, capture_output=False,
                   label="prepare")


def _run_prepare(session: Session, prepare: RunSpec | None) -> None:
    if prepare is None:
        return
    res = session.setup(prepare)
    if not res.ok:
        last = res.stderr_tail.strip().splitlines()[-1:] or [""]
        raise PerflabError(
            f"--prepare command '{prepare.argv[0]}' {describe_failure(res, prepare.timeout)}"
            f"{' (stderr: ' + last[0] + ')' if last[0] else ''}: fix the --prepare command")


def execute(config: RunConfig, session: Session, machine: Machine | None = None) -> RunStudyResult:
    """Warm up, then rounds in a seeded shuffled order until each benchmark's stop rule holds."""
    if not config.commands:
        raise PerflabError("nothing to run: give a command after -- or commands as arguments")
    specs = plan(config, machine)
    prepare = _prepare(config)
    for spec in specs:  # warm-up: not stored, but a failure is still a failure
        for _ in range(config.warmup):
            if session.stored(spec, 0):
                break
            _run_prepare(session, prepare)
            res = session.warmup(spec)
            if res is not None and not res.ok and not config.ignore_failure:
                raise _failure_error(spec.label, res, config.timeout)
    now = session.executor.now_ns
    before = cpu_times()
    rng = random.Random(config.seed)
    walls: list[list[float]] = [[] for _ in specs]  # successful runs' wall times, per spec
    runs: list[Run] = []
    reps = [0] * len(specs)
    active = list(range(len(specs)))
    target = {i: config.runs for i in active} if config.runs is not None else {}
    stopped = ("runs" if config.runs is not None else "precision" if config.precision
               else "budget" if config.until_decided else "time-budget")
    t0 = now()
    first = True
    together: bool | None = None  # decided where the first command would stop (interleave_note)
    stop_round = 0
    while active:
        order = list(active)
        if len(order) > 1:
            rng.shuffle(order)
        for i in order:
            spec = specs[i]
            # One command and nothing between its runs: the rounds up to the next decision go
            # back to back (session.run_many): each run journalled before the next starts, stored
            # a group at a time.
            count = (rounds_ahead(config, reps[i], target.get(i), walls[i], (now() - t0) / 1e9)
                     if len(order) == 1 and prepare is None else 1)
            if count > 1 and config.gate is not None:  # back to back up to the next look, no further
                count = min(count, gated.next_look(config, reps[i], target[i]) - reps[i])
            if count == 1 and not session.stored(spec, reps[i]):
                _run_prepare(session, prepare)
            for res in session.run_many(spec, reps[i], count):
                runs.append(Run(spec.label, dict(spec.params), reps[i], res))
                reps[i] += 1
                if res.ok:
                    walls[i].append(res.wall_ns / 1e9)
                elif not config.ignore_failure:
                    raise _failure_error(spec.label, res, config.timeout)
                session.say(f"{len(runs)} runs, last: {spec.label}")
        if first and config.until_decided:  # the budget's rounds, every command in every one
            n = looks.budget(config, sum(r.result.wall_ns for r in runs) / 1e9)
            target = {i: n for i in active}
        elif first and config.runs is None and config.precision is None:
            # hyperfine's rule: enough runs to fill the time budget, at least min_runs.
            for i in active:
                # the first run's wall time, failed or not (a failure still took that long)
                t = max(next(r.result.wall_ns for r in runs if r.label == specs[i].label) / 1e9, 1e-6)
                n = max(config.min_runs, math.ceil(DEFAULT_TIME_BUDGET_S / t))
                target[i] = min(n, config.max_runs) if config.max_runs else n
        first = False
        still = []
        for i in active:
            n = reps[i]
            if config.max_runs is not None and n >= config.max_runs:
                stopped = "max-runs" if config.precision else stopped
                continue
            if config.precision is not None and config.runs is None:
                if len(walls[i]) >= max(config.min_runs, 2) and precise(walls[i], config.precision):
                    continue
                still.append(i)
            elif n < target[i]:
                still.append(i)
        if together is None and still and len(still) < len(active):
            # Here one command would stop and the others go on alone, in a block: where the
            # first rounds show two speeds, every command runs to the last one's stop instead.
            together = two_speeds_seen([walls[i] for i in range(len(specs))])
            if together:
                stop_round = min(reps[i] for i in active)
        if together and still:
            still = [i for i in active if config.max_runs is None or reps[i] < config.max_runs]
        active = still
        if active and config.until_decided and _look_decides(config, runs, min(reps), target[active[0]], len(specs)):
            stopped = "decided"
            break
        if active and config.max_time is not None and (now() - t0) / 1e9 >= config.max_time:
            if all(reps[i] >= 2 for i in active):
                stopped = "max-time"
                break
    result = analyse(config, runs, stopped_by=stopped)
    if together:
        result.warnings.insert(0, interleave_note(stop_round, [b.n for b in result.benchmarks]))
    result.instrument = instrument.with_executor(result.instrument, session.executor)
    if session.executor.live:  # the mock plays no machine
        result.warnings.extend(machine_notes(before, cpu_times()))
    return result


def _look_decides(config: RunConfig, runs: list[Run], rounds: int, limit: int, commands: int) -> bool:
    """Whether a look falls after ``rounds`` rounds and decides: the gate's comparisons against
    the baseline (run/gated.py), else every command's against the reference."""
    if config.gate is not None:
        if not gated.due(config, rounds, limit):
            return False
        at = gated.look(config, runs, "look")
        return bool(at and at["decided"])
    return looks.due(config, rounds, limit, commands - 1) and _decided(config, runs)


def _decided(config: RunConfig, runs: list[Run]) -> bool:
    """At a look: whether every comparison with the reference is decided (the comparisons alone,
    without the rest of analyse's summaries: a long run looks a dozen times)."""
    benches = _collect(config, runs)
    for b in benches:
        b.summary = _describe(b.times) if b.times else None
    measure, higher = ranking(config.primary_metric, config.higher_is_better)
    look = looks.plan_at(config, runs, len(benches) - 1, "look")
    assert look is not None  # a look comes after a round
    compare(benches, measure, higher, config.reference or benches[0].command, look.level, config.min_effect)
    looks.settle(look, benches)
    return look.decided


def _describe(xs: list[float]) -> dict[str, float]:
    """n, mean, median, sample stddev, min, max, quartiles (type 7): the stdlib keeps numpy out
    of a short run's start-up."""
    q1, _, q3 = statistics.quantiles(xs, n=4, method="inclusive") if len(xs) > 1 else (xs[0],) * 3
    return dict(n=len(xs), mean=statistics.fmean(xs), median=statistics.median(xs),
                stddev=statistics.stdev(xs) if len(xs) > 1 else 0.0, min=min(xs), max=max(xs),
                q1=q1, q3=q3)


def _collect(config: RunConfig, runs: Iterable[Any]) -> list[Benchmark]:
    specs = plan(config)
    benches = {s.label: Benchmark(s.label, {k: str(v) for k, v in s.params.items()}) for s in specs}
    ordered = sorted(runs, key=lambda r: (r.label, int(r.rep)))
    for r in ordered:
        b = benches.get(r.label)
        if b is None:
            continue
        res: RunResult = r.result
        if not res.ok:
            reason = res.failure or "failed"
            b.failures[reason] = b.failures.get(reason, 0) + 1
            continue
        k = b.n
        b.times.append(res.wall_ns / 1e9)
        b.user.append(res.user_s)
        b.system.append(res.sys_s)
        b.maxrss_kb.append(res.maxrss_kb)
        for name in ("minflt", "majflt", "nvcsw", "nivcsw"):
            b.rusage.setdefault(name, []).append(getattr(res, name))
        for store, values in ((b.metrics, res.metrics), (b.counters, res.counters)):
            for name in set(store) | set(values):
                store.setdefault(name, [None] * k).append(values.get(name))
        b.suspect += bool(res.suspect)
    return list(benches.values())


def analyse(config: RunConfig, runs: Iterable[Any], stopped_by: str = "runs") -> RunStudyResult:
    """Summaries, median CIs (order statistics), two speeds or outliers, ratios to the reference
    in the ranked measure, warnings."""
    runs = list(runs)
    benches = _collect(config, runs)
    measure, higher = ranking(config.primary_metric, config.higher_is_better)
    warnings: list[str] = []
    for b in benches:
        if b.failed:
            why = ", ".join(f"{n} {reason}" for reason, n in sorted(b.failures.items()))
            warnings.append(f"'{b.command}': every run failed ({why}): no timing to report"
                            if not b.times else f"'{b.command}': {b.failed} of {b.failed + b.n} "
                            f"runs failed ({why}); failed runs are left out of every statistic")
        xs = b.times
        if not xs:
            continue
        b.summary = _describe(xs)
        b.median_ci = median_ci(xs).as_dict()
        if len(xs) >= 3:
            b.outliers = mad_outliers(xs)
        s = b.summary
        cv = s["stddev"] / s["mean"] if s["n"] >= 3 and s["mean"] > 0 else 0.0
        speeds = two_speeds(ranked_values(b, measure))
        if speeds is not None:
            # Two speeds are no outliers and no noise: name them, and say nothing of "other load"
            # or a CV that mixes them.
            b.modes = speeds.as_dict()
            b.modes["measure"] = measure
            warnings.append(two_speeds_line(b))
        elif b.outliers:
            warnings.append(
                f"'{b.command}': {len(b.outliers)} of {len(xs)} runs are outliers (modified "
                "Z-score > 3.5): other load disturbed them; the median and its CI resist them, "
                "but consider --warmup or a quieter machine")
        if speeds is None and cv > CV_WARN:
            warnings.append(f"'{b.command}': noisy, coefficient of variation "
                            f"{100 * s['stddev'] / s['mean']:.1f}% > {100 * CV_WARN:.0f}%")
        if config.warmup == 0 and len(xs) >= 5 and xs[0] > 2 * s["median"]:
            warnings.append(f"'{b.command}': the first run took {xs[0] / s['median']:.1f}x "
                            "the median (cold caches?): consider --warmup 1 or more")
        if b.suspect:
            warnings.append(f"'{b.command}': {b.suspect} of {len(xs)} runs were taken while the "
                            "machine was disturbed (suspect: CPU pressure above 20 %, steal above "
                            "2 % or a thermal throttle event; their health is stored with them)")
    if config.perf_stat:
        warnings.append("with --perf-stat the wall times, user/sys and max RSS include perf's own "
                        "start-up: compare the counters (duration_time is the command's own wall "
                        "time in ns), or rerun without --perf-stat for timings")
    per_event = events_metric(config.metrics, config.primary_metric)
    by_label: dict[str, list[RunResult]] = {}
    for r in runs:
        by_label.setdefault(r.label, []).append(r.result)
    for b in benches:
        energy = summarise(by_label.get(b.command, []), per_event)  # failed runs are left out there
        b.energy = energy.as_dict() if energy is not None else None
        b.series = series_of(by_label.get(b.command, []), config.skip_events)
    reference = config.reference or (benches[0].command if benches else None)
    # with a gate the looks decide the comparisons against the baseline; the commands' own
    # comparisons (several commands) are then made as without looks
    look = (looks.plan_at(config, runs, len(benches) - 1, stopped_by)
            if config.until_decided and config.gate is None else None)
    warnings.extend(compare(benches, measure, higher, reference, look.level if look else None, config.min_effect))
    if stopped_by == "max-runs" and config.precision is not None:
        warnings.extend(precision_missed(benches, config.precision, config.max_runs))
    result = RunStudyResult(benches, warnings, stopped_by)
    result.instrument = instrument.summarise(config.instrument, config.cache_model, benches)
    result.health = health_summary([r.result for r in runs])
    result.ranking = dict(measure=measure, higher_is_better=higher, reference=reference)
    result.workload = profile_target(config.workload, config.series)
    if look is not None:
        looks.settle(look, benches)
        result.sequential = look.as_dict()
    elif config.until_decided and config.gate is not None:
        result.sequential = gated.look(config, runs, stopped_by)
    return result
