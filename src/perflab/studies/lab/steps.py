"""The studies ``perflab lab`` runs, each turned from the lab's options into its own config.

Quick mode keeps every study but shrinks it (a 20-event minihlt, fewer N and sizes, fewer rounds
where a study can still answer with them) so the whole lab finishes in a few minutes on a 2-CPU
machine; the default is thorough within a time budget (budget.py: before each study, its share of
the time left, in rounds). Each study gets at least the rounds its test needs to reach an answer
(tests/real/test_lab_degrade.py), and a study whose tool is missing makes do or is skipped.
A step returns the study module and its config; lab runs it as a child campaign through
``run_study``.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable

from perflab.errors import PerflabError, Unsupported
from perflab.kernels import minihlt
from perflab.model import Workload
from perflab.platform.affinity import usable_cpus
from perflab.platform.machine import Machine
from perflab.platform.probes import perf_status
from perflab.startup import which
from perflab.studies.run import study as run_mod
from perflab.studies.session import Session
from perflab.workloads import list_workloads, resolve
from perflab.kernels.variants import BuildTarget, parse_variant
from perflab.measure.window import Window
from perflab.studies.cores import study as cores
from perflab.studies.instances import study as instances
from perflab.studies.instances.optimum import MIN_ROUNDS
from perflab.studies.micro import study as mi
from perflab.studies.profile import study as profile
from perflab.studies.frontend import study as fe
from perflab.studies.lab import budget
from perflab.studies.variants import study as vs

if TYPE_CHECKING:  # the lab's study module imports this one
    from perflab.studies.lab.study import LabConfig


@dataclass
class LabContext:
    config: LabConfig
    session: Session
    machine: Machine
    workload: Workload | None = None
    minihlt: bool = False
    notes: list[str] = field(default_factory=list)
    deadline: float | None = None  # time.monotonic() by which the studies should be done (budget)
    seconds: float | None = None  # the workload's seconds a run (the run study's median, else one run)


@dataclass
class Step:
    """A study to run: its module (NAME, Config, execute, Result) and its config."""

    module: ModuleType
    config: Any


STEPS: dict[str, Callable[[LabContext], Step]] = {}


def step(name: str) -> Callable[[Callable[[LabContext], Step]], Callable[[LabContext], Step]]:
    def deco(fn: Callable[[LabContext], Step]) -> Callable[[LabContext], Step]:
        STEPS[name] = fn
        return fn

    return deco


def lab_workload(cfg: Any, build: bool = True) -> Workload:
    """The lab's workload by name, perflab.toml path or minihlt (sized by --quick; built unless
    ``build=False``, which the CLI uses to check --primary-metric before anything runs)."""
    name, config_path = cfg.workload, cfg.config_path
    if name and name.endswith(".toml"):
        config_path = name
        names = [w.name for w in list_workloads(config_path) if w.source != "builtin"]
        if not names:
            raise PerflabError(f"{name} defines no workload: add a [workload.NAME] table")
        name = names[0]
    if name in (None, "minihlt"):
        return minihlt.quick_workload(build=build) if cfg.quick else minihlt.workload(build=build)
    return resolve(name, (), config_path=config_path)


def prepare(ctx: LabContext) -> None:
    """Resolve (and build) the workload once; minihlt is sized by --quick."""
    cfg = ctx.config
    if cfg.workload in (None, "minihlt"):
        ctx.session.say("building minihlt (cached after the first time)...")
        ctx.minihlt = True
    ctx.workload = lab_workload(cfg)
    if cfg.workload_args:
        ctx.workload = replace(ctx.workload, argv=(*ctx.workload.argv, *cfg.workload_args))
    if cfg.primary_metric not in (None, ctx.workload.primary_metric):
        ctx.workload = replace(ctx.workload, primary_metric=cfg.primary_metric, unit=None)
    if cfg.higher_is_better is not None:
        ctx.workload = replace(ctx.workload, higher_is_better=cfg.higher_is_better)
    ctx.session.say(f"workload: {ctx.workload.name}: {' '.join(ctx.workload.argv)}")


def workload_seconds(ctx: LabContext) -> float:
    """The workload's seconds a run: the run study's median, else one run of it (stored in the
    lab campaign, so a resumed lab reads it back)."""
    if ctx.seconds is None:
        assert ctx.workload is not None
        result = ctx.session.run(ctx.workload.spec(label="budget-probe", timeout=600))
        ctx.seconds = result.wall_ns / 1e9
    return ctx.seconds


def _ns(ncpu: int, quarters: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(sorted({1} | {max(1, ncpu * k // 4) for k in quarters}))


FEW_N, MORE_N = (4, 8), (1, 2, 3, 4, 6, 8)  # instances' N, in quarters of the usable CPUs


def _forks(ctx: LabContext) -> bool:
    return ctx.workload is not None and "{events}" in (ctx.workload.fork_arg or ())


def _instance_rounds(ctx: LabContext, ncpu: int) -> dict[str, int]:
    """Workload run-lengths of one round of the instances scan: "few" (N = 1, the CPUs, twice
    them, each placement policy), "full" (more N on 4 CPUs or more, and the fork-master
    comparison: one master with N workers, bound and not, about one run-length a point)."""
    machine = getattr(ctx, "machine", None)
    policies = len(instances.default_policies(machine.topology)[0]) if machine is not None else 2
    few = policies * sum(-(-n // ncpu) for n in _ns(ncpu, FEW_N))
    more = _ns(ncpu, MORE_N if ncpu >= 4 else FEW_N)
    return {"few": few, "full": policies * sum(-(-n // ncpu) for n in more) + 2 * len(more) * _forks(ctx)}


def planned(ctx: LabContext, name: str) -> int | None:
    """This study's rounds from the lab's time budget (budget.allot over the studies still to
    run, with the time really left), or None where the lab has no budget (quick)."""
    if ctx.deadline is None:
        return None
    order = list(ctx.config.order)
    order = order[order.index(name):] if name in order else [name]
    ncpu = len(usable_cpus())
    seconds = workload_seconds(ctx) if ctx.workload is not None else 1.0
    items = budget.items(order, seconds, ncpu, _instance_rounds(ctx, ncpu), variants=len(VARIANTS),
                         cores_alpha=cores.CoresConfig.alpha, variants_alpha=vs.VariantsConfig.alpha)
    left = ctx.deadline - time.monotonic()
    rounds = budget.allot(items, left)[name]
    it = items[name]
    ctx.session.say(f"budget: {name} gets {rounds} of {it.least}-{it.most} (rounds, or 1 for its full "
                    f"settings); {left:.0f} s left for {', '.join(order)}, {seconds:.2f} s a run")
    return rounds


@step("run")
def run_step(ctx: LabContext) -> Step:
    wl = ctx.workload
    assert wl is not None
    q = ctx.config.quick
    # The full lab within a budget: the run study's precision goal stops it first where it can; its
    # runs are the lab's first measure of the workload (its 10 runs come first), so its share is
    # an eighth of the time left.
    max_time = 20 if q else 120
    if ctx.deadline is not None:
        max_time = max(10, min(max_time, int((ctx.deadline - time.monotonic()) / 8)))
    config = run_mod.RunConfig(
        commands=(run_mod.Command(wl.name, tuple(wl.argv), wl.shell),), metrics=wl.metrics,
        primary_metric=wl.primary_metric,
        higher_is_better=wl.higher_is_better if wl.primary_metric else None,
        # Quick: 10 runs, no precision goal. A 2 % goal with at most 10 runs was missed on any
        # machine whose runs spread by more than the sample's range allows (the median's CI of 10
        # runs spans the 2nd to the 9th), and the lab warned of its own setting.
        warmup=1, runs=10 if q else None, precision=None if q else 0.02,
        min_runs=10, max_runs=None if q else 40, max_time=max_time,
        seed=ctx.config.seed, workload=wl.name, env=tuple((wl.env or {}).items()), cwd=wl.cwd,
        series=tuple(wl.series), skip_events=wl.skip_events,  # the steady rate and the tail
    )
    return Step(run_mod, config)


@step("cores")
def cores_step(ctx: LabContext) -> Step:
    q = ctx.config.quick
    usable = usable_cpus()  # as the instances step counts them
    if len(usable) < 2:
        # a 1-CPU machine, or a tuned lab whose benchmark cpuset holds one CPU
        raise Unsupported(f"one usable CPU ({', '.join(map(str, usable)) or 'none'}): the scan compares "
                          "CPUs with each other")
    # Quick: 16 rounds at most, stopping from 8 once a 4 % slowdown is detectable (6 rounds
    # answered nothing on 2 CPUs); its 3 blocks 10 s apart, where the default 60 s span would make
    # the scan wait for half a minute (capped at 3/4 of max_time): the quick lab says "scan
    # longer" where a CPU is slow in every block of so short a span, not "slow core".
    config = cores.CoresConfig(workload=ctx.workload, rounds=16 if q else 30, min_rounds=8,
                               max_time=40 if q else 600, seed=ctx.config.seed,
                               **({"span": 10.0} if q else {}))  # type: ignore[arg-type]  # span is a float
    rounds = planned(ctx, "cores")
    if rounds is not None:
        # its blocks no further apart than its rounds take, so the scan never waits for the span
        took = rounds * len(usable) * workload_seconds(ctx)
        config = replace(config, rounds=rounds, min_rounds=min(8, rounds), span=min(config.span, took),
                         max_time=max(60.0, 2 * took))
    return Step(cores, config)


@step("instances")
def instances_step(ctx: LabContext) -> Step:
    q = ctx.config.quick
    wl = ctx.workload
    assert wl is not None
    ncpu = len(usable_cpus())
    # An optimum needs MIN_ROUNDS rounds a point (one-sided exact Mann-Whitney, 1/C(2m, m) < alpha):
    # fewer (1 round quick, 3 full, as before) could only say "not enough evidence". So fewer N
    # with 5 rounds each: one copy, one per CPU and twice that; the full lab on 4 CPUs or more
    # also a quarter, a half, three quarters and 1.5 times the CPUs (at most seven N, where the
    # default scan has 14 on 64 CPUs). On 2 CPUs the full scan drops N = 3: 1, 2, 4 at 5 rounds
    # cost about what 1-4 at 3 rounds did (2-3 s a copy of the full minihlt).
    # Within the full lab's budget, the longer scan and the fork-master comparison where its
    # share allows them; the quick lab compares fork masters at its few N.
    thorough = q or planned(ctx, "instances") != 0
    ns = _ns(ncpu, MORE_N if thorough and not q and ncpu >= 4 else FEW_N)
    config = instances.InstancesConfig(workload=wl, ns=ns, reps=max(5, MIN_ROUNDS),
                                       fork_master=thorough and _forks(ctx), seed=ctx.config.seed)
    return Step(instances, config)


@step("variants")
def variants_step(ctx: LabContext) -> Step:
    wl0 = ctx.workload
    if not ctx.minihlt or wl0 is None:
        raise Unsupported(f"workload {wl0.name if wl0 else '?'} has no build recipe perflab can vary")
    q = ctx.config.quick
    target = BuildTarget("minihlt", tuple(minihlt.cpp_sources()), "c++", cflags=("-std=c++17",),
                         ldflags=("-lm",), extra_inputs=tuple(minihlt.headers()))
    args = tuple(wl0.argv[1:])
    wl = Workload(name="minihlt", argv=("{exe}", *args), metrics=wl0.metrics,
                  primary_metric="events_per_s", checksum_metric="checksum")
    rounds = None if q else planned(ctx, "variants")
    config = vs.VariantsConfig(target=target, workload=wl, variants=tuple(parse_variant(s) for s in VARIANTS),
                               baseline="m64-O2", rounds=8 if q else rounds or vs.DEFAULT_ROUNDS, warmup=1,
                               seed=ctx.config.seed, train_argv=("{exe}", *args, "--seed", "12345"),
                               # minihlt's training reads and writes nothing in its working
                               # directory (the profile goes to the build's own), so it runs in
                               # minihlt's source directory: a PGO build is keyed by where it
                               # trained, and the lab's then stays cached from one directory to
                               # the next (about 4 CPU s: 12 compiles and a training run)
                               train_cwd=str(minihlt.HERE))
    return Step(vs, config)


VARIANTS = ("m64-O2=-m64 -O2", "m32-O2=-m32 -msse2 -mfpmath=sse -O2", "mx32-O2=-mx32 -O2",
            "O3-native=-m64 -O3 -march=native", "lto=-m64 -O2 -flto", "pgo=-m64 -O2 pgo")
_DONE = re.compile(r"done processing event #(\d+) in ([\d.]+) ms")


def slowest_metrics(output: str) -> dict[str, float]:
    """The slowest event of a log with minihlt's 'done processing event #K in X ms' lines."""
    events = [(int(m.group(1)), float(m.group(2))) for m in _DONE.finditer(output)]
    if not events:
        return {}
    k, ms = max(events, key=lambda e: e[1])
    return {"event": float(k), "event_ms": ms}


def slowest_event(ctx: LabContext) -> tuple[int, float] | None:
    """Run the workload once through the executor for its slowest event; the run is stored in
    the lab campaign, so a resumed lab reads it back instead of running it again."""
    wl = ctx.workload
    if wl is None or not wl.event_arg:
        return None
    spec = wl.spec(label="slowest-event", timeout=300, capture_output=True)
    result = ctx.session.capture(spec, parse=slowest_metrics)
    if not result.ok or "event" not in result.metrics:
        return None
    return int(result.metrics["event"]), float(result.metrics["event_ms"])


def profiler(ctx: LabContext) -> str:
    """perf where it records; callgrind where perf is missing or not permitted and Valgrind is
    there; else Unsupported, naming what to install (a cloud guest often has neither)."""
    perf = perf_status()
    if perf.available:
        return "perf"
    if which("valgrind") is None:
        raise Unsupported(f"{perf.reason}; or install Valgrind for counts instead of samples "
                          "(apt-get install valgrind)")
    ctx.notes.append(f"{perf.reason}: profiled under Valgrind's callgrind instead (counted, not sampled)")
    ctx.session.say(ctx.notes[-1])
    return "callgrind"


@step("profile")
def profile_step(ctx: LabContext) -> Step:
    instrument = profiler(ctx)
    slow = slowest_event(ctx)
    if slow is not None:
        k, ms = slow
        ctx.session.say(f"profiling the slowest event: #{k} ({ms:.1f} ms)")
        window = Window(start=rf"start processing event #{k}\b", stop=rf"done processing event #{k}\b")
    else:
        ctx.session.say("the workload prints no event markers: profiling the whole run")
        window = Window()
    # A quick event lasts a few ms: sample faster so the table has enough samples to read.
    config = profile.ProfileConfig(workload=ctx.workload, window=window, repeat=1 if ctx.config.quick else 3,
                                   freq=20000, out_dir=os.path.join(ctx.config.out_dir, "profiles"),
                                   instrument=instrument)
    return Step(profile, config)


@step("frontend")
def frontend_step(ctx: LabContext) -> Step:
    # within the full lab's budget, the quick sweep where the full one does not fit
    q = ctx.config.quick or planned(ctx, "frontend") == 0
    config = fe.FrontendConfig(min_bytes=16 << 10, max_bytes=(2 << 20) if q else (4 << 20),
                               points_per_octave=1 if q else 2, iters=1_000_000 if q else 2_000_000,
                               reps=10, perf_span=not q, seed=ctx.config.seed)
    return Step(fe, config)


@step("micro")
def micro_step(ctx: LabContext) -> Step:
    q = ctx.config.quick or planned(ctx, "micro") == 0
    # The I/O benchmarks write a temporary file: keep it out of the user's working directory.
    # 10 rounds even when quick: with fewer no difference can pass Holm over 13 operations.
    config = mi.MicroConfig(reps=10, scale=0.1 if q else 1.0, io_dir=tempfile.gettempdir(),
                            shm="off" if q else "auto", seed=ctx.config.seed)
    return Step(mi, config)
