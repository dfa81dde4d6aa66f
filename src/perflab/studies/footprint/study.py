"""Footprint study: which files does a workload really need? (seed 004: strace on a running HLT)

The workload runs under ``strace -f`` tracing file and exec calls, pinned with strace on one CPU
(unpinned, the tracer and the traced process ping-pong between CPUs and strace costs up to 5x)
and with ``--seccomp-bpf`` where strace has it, so untraced calls do not stop the process. What a
trace says about files is in files.py; each traced run carries it in its stored health
(tracing.py), so a resumed campaign replays the runs it holds and traces only what is missing.

The shape of a measuring study: ``FootprintConfig`` (frozen), ``plan`` (pure: traced and
untraced runs interleaved, order shuffled per round), ``execute`` through the Session (each run
stored as it completes), ``analyse`` (pure) -> ``FootprintResult``.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from typing import Any

from perflab.errors import PerflabError
from perflab.model import RunResult, RunSpec, Workload
from perflab.platform import strace
from perflab.platform.affinity import usable_cpus
from perflab.stats.shift import ratio_ci
from perflab.studies.base import StudyConfig, VerdictResult
from perflab.studies.footprint.files import FailedLookup, FileUse, TopDir, by_top_dir, needed
from perflab.studies.footprint.tracing import TRACED, Tracing, strace_missing, trace_of
from perflab.studies.session import Session

NAME = "footprint"
UNTRACED = "untraced"


@dataclass(frozen=True)
class FootprintConfig(StudyConfig):
    """What to trace and how."""

    workload: Workload
    cpu: int | None = None  # CPU strace and the workload share; None: the last allowed CPU
    seccomp: bool = True  # strace --seccomp-bpf where supported
    reps: int = 3  # traced and untraced runs each, interleaved, for the overhead ratio
    timeout: float | None = 600.0
    keep_trace: str | None = None  # copy the raw strace output here

    decoders = {"workload": Workload.from_dict}

    def __post_init__(self) -> None:
        # The directory the workload runs in is part of what was asked: a resume started
        # elsewhere traces the same program in the same place.
        if self.workload.cwd is None:
            object.__setattr__(self, "workload", replace(self.workload, cwd=os.getcwd()))


Config = FootprintConfig

CI_LEVEL = 0.95
# Moses' interval (stats.shift.ratio_ci) carries the level the runs reach: 90 % from 3 runs each,
# 97 % from 4; from 2 each it is the range of 4 ratios at 67 %, too little to print.
MIN_CI_RUNS = 3


@dataclass(kw_only=True)
class FootprintResult(VerdictResult):
    workload: str
    argv: tuple[str, ...]
    cwd: str
    cpu: int | None
    seccomp: bool
    files: list[FileUse]
    failed: list[FailedLookup]
    by_top: list[TopDir]
    total_files: int
    total_bytes: int
    traced_wall_s: list[float] = field(default_factory=list)
    untraced_wall_s: list[float] = field(default_factory=list)
    overhead: float | None = None  # traced / untraced wall time: Hodges-Lehmann ratio (median pairwise ratio)
    overhead_ci: tuple[float, float] | None = None  # only from MIN_CI_RUNS runs each
    overhead_ci_level: float | None = None
    trace_path: str | None = None
    syscalls: int = 0

    def needed(self) -> list[FileUse]:
        """Existing regular files read, executed or loaded: what a bundle must carry."""
        return needed(self.files)

    @property
    def verdict(self) -> str:
        return (f"{self.total_files} files, {_mib(self.total_bytes)} needed; {len(self.failed)} failed look-ups"
                + (f"; tracing costs {self.overhead:.2f}x" if self.overhead else ""))



def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def default_cpu() -> int:
    """The last CPU this process may use (CPU 0 takes most interrupts)."""
    return max(usable_cpus())


def argv_of(workload: Workload) -> tuple[str, ...]:
    """The command as strace runs it: a shell workload through /bin/sh -c."""
    if workload.shell:
        return ("/bin/sh", "-c", " ".join(workload.argv))
    return tuple(workload.argv)


def plan(config: FootprintConfig, machine: Any = None) -> list[tuple[int, RunSpec]]:
    """(rep, spec) in run order: per round one traced and one untraced run, their order shuffled
    (seeded, so a resume replans the same order) so drift hits both."""
    wl = config.workload
    cpu = config.cpu if config.cpu is not None else default_cpu()
    rng = random.Random(0)
    out: list[tuple[int, RunSpec]] = []
    for rep in range(max(1, config.reps)):
        order = [TRACED, UNTRACED]
        rng.shuffle(order)
        for mode in order:
            params = {"mode": mode, "cpu": cpu}
            spec = (wl.spec(argv=argv_of(wl), shell=False, cpus=(cpu,), timeout=config.timeout, params=params)
                    if mode == TRACED else wl.spec(cpus=(cpu,), timeout=config.timeout, params=params))
            out.append((rep, spec))
    return out


def execute(config: FootprintConfig, session: Session, machine: Any = None) -> FootprintResult:
    """Run the plan through the session (each run stored as it completes, a stored one replayed),
    stop at the first failed run, analyse."""
    if strace.strace_path() is None:
        raise strace_missing()
    seccomp = config.seccomp and strace.seccomp_bpf_supported()
    if config.seccomp and not seccomp:
        session.say("strace has no --seccomp-bpf here: tracing stops the workload at every system call")
    tmpdir = tempfile.mkdtemp(prefix="perflab-strace-")
    tracing = Tracing(session.executor, seccomp, tmpdir)
    runs = Session(tracing, session.store, session.campaign_id, session.progress, resumed=session.resumed)
    done: list[tuple[dict, RunResult]] = []
    trace_path = None
    try:
        for rep, spec in plan(config, machine):
            first_trace = spec.params["mode"] == TRACED and rep == 0
            tracing.keep = config.keep_trace if first_trace else None
            result = runs.run(spec, rep=rep)
            if not result.ok:
                detail = (result.stderr_tail or "").strip().splitlines()[-1:] or [""]
                raise PerflabError(
                    f"{spec.params['mode']} run of {config.workload.name} failed (exit {result.exit_code}, "
                    f"signal {result.signal}): {detail[0]}; check that the workload runs on its own first")
            done.append((dict(spec.params), result))
            if first_trace and config.keep_trace:
                trace_path = _keep_trace(session, config.keep_trace, trace_of(result)[2])
    finally:
        session.executed += runs.executed
        session.replayed += runs.replayed
        shutil.rmtree(tmpdir, ignore_errors=True)
    return analyse(config, done, trace_path)


def _keep_trace(session: Session, path: str, syscalls: int) -> str | None:
    """The kept raw trace, recorded once as the campaign's artifact (a resume finds it there)."""
    path = os.path.abspath(path)
    if any(a.kind == "strace" for a in session.store.artifacts(session.campaign_id)):
        return path
    if not os.path.exists(path):
        return None  # the first traced run was stored by a perflab killed before it copied
    session.store.add_artifact(session.campaign_id, "strace", path, {"syscalls": syscalls})
    return path


def analyse(config: FootprintConfig, runs: list[tuple[dict, RunResult]],
            trace_path: str | None = None) -> FootprintResult:
    """The first traced run's files, the needed files by top directory, and the tracing overhead
    (traced / untraced wall time: Hodges-Lehmann ratio with Moses' interval)."""
    wl = config.workload
    traced = [r for p, r in runs if p["mode"] == TRACED]
    untraced = [r for p, r in runs if p["mode"] == UNTRACED]
    files, failed, syscalls = trace_of(traced[0]) if traced else ([], [], 0)
    seccomp = bool(traced[0].health.get("trace", {}).get("seccomp")) if traced else config.seccomp
    top = by_top_dir(files)
    t_wall, u_wall = [r.wall_s for r in traced], [r.wall_s for r in untraced]
    ratio = ci = level = None
    if t_wall and u_wall and min(u_wall) > 0:
        ratio, moses = ratio_ci(t_wall, u_wall, CI_LEVEL)
        if min(len(t_wall), len(u_wall)) >= MIN_CI_RUNS:
            ci, level = (moses.low, moses.high), moses.level
    return FootprintResult(
        workload=wl.name, argv=argv_of(wl), cwd=os.path.abspath(wl.cwd or os.getcwd()),
        cpu=runs[0][0]["cpu"] if runs else config.cpu, seccomp=seccomp, files=files, failed=failed, by_top=top,
        total_files=sum(t.files for t in top), total_bytes=sum(t.bytes for t in top), traced_wall_s=t_wall,
        untraced_wall_s=u_wall, overhead=ratio, overhead_ci=ci, overhead_ci_level=level, trace_path=trace_path,
        syscalls=syscalls, runs=len(runs),
    )
