"""The studies ``perflab lab`` runs, each turned from the lab's options into its own config.

Quick mode keeps every study but shrinks it (fewer rounds, a 20-event minihlt, fewer sizes)
so the whole lab finishes in a few minutes on a 2-CPU machine; the default is thorough.
"""

from __future__ import annotations

import re
import subprocess
from typing import Any

from perflab.errors import PerflabError, Unsupported
from perflab.studies import run_study
from perflab.studies.lab import LabContext, step


def topology_dict(topo: Any) -> dict:
    return topo.to_dict()


def prepare(ctx: LabContext) -> None:
    """Resolve (and build) the workload once; minihlt is sized by --quick."""
    cfg = ctx.config
    name, config_path = cfg.workload, cfg.config_path
    if name and name.endswith(".toml"):
        config_path = name
        from perflab.workloads import list_workloads

        names = [w.name for w in list_workloads(config_path) if w.source != "builtin"]
        if not names:
            raise PerflabError(f"{name} defines no workload: add a [workload.NAME] table")
        name = names[0]
    if name in (None, "minihlt"):
        from perflab.kernels import minihlt

        ctx.say("building minihlt (cached after the first time)...")
        ctx.workload = minihlt.quick_workload() if cfg.quick else minihlt.workload()
        ctx.minihlt = True
    else:
        from perflab.workloads import resolve

        ctx.workload = resolve(name, (), config_path=config_path)
    ctx.say(f"workload: {ctx.workload.name}: {' '.join(ctx.workload.argv)}")


def _console(ctx: LabContext) -> Any:
    return ctx.console


@step("run")
def run_step(ctx: LabContext, store: Any) -> None:
    from perflab.studies.run import Command, RunConfig, print_result, run_run

    wl = ctx.workload
    config = RunConfig(
        commands=(Command(wl.name, tuple(wl.argv), wl.shell),), metrics=wl.metrics,
        primary_metric=wl.primary_metric, warmup=1,
        runs=None, precision=0.02, min_runs=5 if ctx.config.quick else 10,
        max_runs=10 if ctx.config.quick else 40, max_time=20 if ctx.config.quick else 120,
        seed=ctx.config.seed, workload=wl.name, env=tuple((wl.env or {}).items()), cwd=wl.cwd,
    )
    result = run_run(config, ctx.executor, store, _console(ctx))
    if ctx.console is not None:
        print_result(result, ctx.console)


@step("cores")
def cores_step(ctx: LabContext, store: Any) -> None:
    from perflab.report.terminal.cores import render
    from perflab.studies import cores, run_study

    q = ctx.config.quick
    config = cores.CoresConfig(workload=ctx.workload, rounds=6 if q else 30, min_rounds=4 if q else 8,
                               max_time=40 if q else 600, seed=ctx.config.seed)
    result = run_study(cores, config, store, ctx.executor, progress=ctx.say, parent_id=ctx.lab_id, name="cores")
    store.started.append(result.campaign_id)
    if ctx.console is not None:
        render(result, ctx.console, ctx.workload.name)


@step("instances")
def instances_step(ctx: LabContext, store: Any) -> None:
    import os

    from perflab.studies import instances, run_study

    q = ctx.config.quick
    ncpu = len(os.sched_getaffinity(0))
    ns = tuple(sorted({1, max(1, ncpu // 2), ncpu, 2 * ncpu})) if q else None
    config = instances.InstancesConfig(workload=ctx.workload, ns=ns, reps=1 if q else 3,
                                       fork_master="{events}" in (ctx.workload.fork_arg or ()),
                                       seed=ctx.config.seed)
    result = run_study(instances, config, store, ctx.executor, progress=ctx.say, parent_id=ctx.lab_id,
                       name="instances")
    ctx.say("instances: every point failed" if result.failed else
            f"instances: best policy {result.optimum_policy}, N = {result.optimum_n}, "
            f"{result.optimum_throughput:.4g} {result.unit}")


@step("variants")
def variants_step(ctx: LabContext, store: Any) -> None:
    from perflab.kernels import minihlt
    from perflab.kernels.variants import BuildTarget, parse_variant
    from perflab.model import Workload
    from perflab.studies import variants as vs

    if not ctx.minihlt:
        raise Unsupported(f"workload {ctx.workload.name} has no build recipe perflab can vary")
    q = ctx.config.quick
    target = BuildTarget("minihlt", tuple(minihlt.cpp_sources()), "c++", cflags=("-std=c++17",),
                         ldflags=("-lm",), extra_inputs=tuple(minihlt.headers()))
    args = tuple(ctx.workload.argv[1:])
    wl = Workload(name="minihlt", argv=("{exe}", *args), metrics=ctx.workload.metrics,
                  primary_metric="events_per_s", checksum_metric="checksum")
    specs = ["m64-O2=-m64 -O2", "m32-O2=-m32 -msse2 -mfpmath=sse -O2", "mx32-O2=-mx32 -O2",
             "O3-native=-m64 -O3 -march=native", "lto=-m64 -O2 -flto", "pgo=-m64 -O2 pgo"]
    config = vs.VariantsConfig(target=target, workload=wl, variants=tuple(parse_variant(s) for s in specs),
                               baseline="m64-O2", rounds=8 if q else vs.DEFAULT_ROUNDS, warmup=1,
                               seed=ctx.config.seed, train_argv=("{exe}", *args, "--seed", "12345"))
    result = run_study(vs, config, store, ctx.executor, progress=ctx.say, parent_id=ctx.lab_id,
                       name="variants")
    store.started.append(result.campaign_id)
    ctx.say(f"variants: {result.verdict}")


_DONE = re.compile(r"done processing event #(\d+) in ([\d.]+) ms")


def slowest_event(argv: tuple[str, ...], timeout: float = 300) -> tuple[int, float] | None:
    """Run the workload once and return its slowest event (number, ms) from its log lines."""
    try:
        out = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    events = [(int(m.group(1)), float(m.group(2))) for m in _DONE.finditer(out.stdout + out.stderr)]
    return max(events, key=lambda e: e[1]) if events else None


@step("profile")
def profile_step(ctx: LabContext, store: Any) -> None:
    import os

    from perflab.measure.window import Window
    from perflab.studies import profile, run_study

    wl = ctx.workload
    slow = slowest_event(tuple(wl.argv)) if wl.event_arg else None
    if slow is not None:
        k, ms = slow
        ctx.say(f"profiling the slowest event: #{k} ({ms:.1f} ms)")
        window = Window(start=rf"start processing event #{k}\b", stop=rf"done processing event #{k}\b")
    else:
        ctx.say("the workload prints no event markers: profiling the whole run")
        window = Window()
    # A quick event lasts a few ms: sample faster so the table has enough samples to read.
    config = profile.ProfileConfig(workload=wl, window=window, repeat=1 if ctx.config.quick else 3,
                                   freq=20000, out_dir=os.path.join(ctx.config.out_dir, "profiles"))
    run_study(profile, config, store, ctx.executor, progress=ctx.say, parent_id=ctx.lab_id, name="profile")


@step("frontend")
def frontend_step(ctx: LabContext, store: Any) -> None:
    try:
        from perflab.studies import frontend as fe
    except ImportError as exc:
        raise Unsupported(f"frontend study not available in this build ({exc})") from None
    q = ctx.config.quick
    config = fe.FrontendConfig(min_bytes=16 << 10, max_bytes=(2 << 20) if q else (4 << 20),
                               points_per_octave=1 if q else 2, iters=1_000_000 if q else 2_000_000,
                               reps=10, perf_span=not q, seed=ctx.config.seed)
    result = run_study(fe, config, store, ctx.executor, progress=ctx.say, parent_id=ctx.lab_id,
                       name="frontend")
    store.started.append(result.campaign_id)
    ctx.say(f"frontend: {result.verdict}")


@step("micro")
def micro_step(ctx: LabContext, store: Any) -> None:
    try:
        from perflab.studies import micro as mi
    except ImportError as exc:
        raise Unsupported(f"micro study not available in this build ({exc})") from None
    import tempfile

    q = ctx.config.quick
    # The I/O benchmarks write a temporary file: keep it out of the user's working directory.
    # 10 rounds even when quick: with fewer no difference can pass Holm over 13 operations.
    config = mi.MicroConfig(reps=10, scale=0.1 if q else 1.0, io_dir=tempfile.gettempdir(),
                            shm="off" if q else "auto", seed=ctx.config.seed)
    result = run_study(mi, config, store, ctx.executor, progress=ctx.say, parent_id=ctx.lab_id,
                       name="micro")
    store.started.append(result.campaign_id)
    ctx.say(f"micro: {len({c.bench for c in result.cells})} operations measured on {', '.join(result.abis)}")
