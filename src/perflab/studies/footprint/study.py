"""Footprint study: which files does a workload really need? (seed 004: strace on a running HLT)

The workload runs under ``strace -f`` tracing file and exec calls, pinned with strace on one CPU
(unpinned, the tracer and the traced process ping-pong between CPUs and strace costs up to 5x)
and with ``--seccomp-bpf`` where strace has it, so untraced calls do not stop the process. Every
path opened, stat-ed, executed or read as a link is listed with its symlinks resolved; failed
look-ups are listed apart. Files the kernel opens itself (the ELF interpreter, a script's ``#!``
interpreter) never appear in a trace, so they are added by reading the executables.
"""

from __future__ import annotations

import os
import random
import stat as stat_mod
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from perflab.model import Workload
from perflab.errors import PerflabError
from perflab.measure.interface import Executor
from perflab.platform import strace
from perflab.stats.shift import ratio_ci
from perflab.platform.files import interpreters, join_path, resolve_links

OPEN_CALLS = {"open", "openat", "openat2", "creat", "open_by_handle_at"}
STAT_CALLS = {"stat", "lstat", "stat64", "lstat64", "newfstatat", "fstatat64", "statx", "access",
              "faccessat", "faccessat2", "statfs", "statfs64", "oldstat", "oldlstat", "getxattr",
              "lgetxattr", "listxattr", "llistxattr"}
EXEC_CALLS = {"execve", "execveat"}
READLINK_CALLS = {"readlink", "readlinkat"}
# *at calls: argument 0 is a directory fd, the path is argument 1
AT_CALLS = {"openat", "openat2", "newfstatat", "fstatat64", "statx", "faccessat", "faccessat2",
            "execveat", "readlinkat", "mkdirat", "unlinkat", "fchmodat", "fchownat", "utimensat",
            "futimesat", "mknodat", "name_to_handle_at", "renameat", "renameat2", "linkat"}
FORK_CALLS = {"clone", "clone3", "fork", "vfork"}
WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND")
VIRTUAL_ROOTS = ("/proc", "/sys", "/dev", "/run")


@dataclass(frozen=True)


class FootprintConfig:
    """What to trace and how."""

    workload: Workload
    cpu: int | None = None  # CPU strace and the workload share; None: the last allowed CPU
    seccomp: bool = True  # strace --seccomp-bpf where supported
    reps: int = 3  # traced and untraced runs each, interleaved, for the overhead ratio
    timeout: float | None = 600.0
    keep_trace: str | None = None  # copy the raw strace output here


@dataclass(frozen=True)


class FileUse:
    """One path the workload used, as it named it, and what it is on disk now."""

    path: str
    uses: tuple[str, ...]  # sorted subset of open, stat, exec, readlink, chdir, interp, other
    real_path: str  # after every symlink on the way
    links: tuple[tuple[str, str], ...]  # (symlink, its target text) met while resolving
    kind: str  # file, dir, virtual (/proc, /sys, /dev), gone (no longer there), other
    size: int
    written: bool  # opened for writing (an output, not an input)


@dataclass(frozen=True)


class FailedLookup:
    path: str
    uses: tuple[str, ...]
    errno: str


@dataclass(frozen=True)


class TopDir:
    top: str
    files: int
    bytes: int


CI_LEVEL = 0.95
# Moses' interval (stats.shift.ratio_ci) carries the level the runs reach: 90 % from 3 runs each,
# 97 % from 4; from 2 each it is the range of 4 ratios at 67 %, too little to print.
MIN_CI_RUNS = 3


@dataclass
class FootprintResult:
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
    campaign_id: int | None = None
    trace_path: str | None = None
    syscalls: int = 0

    def needed(self) -> list[FileUse]:
        """Existing regular files read, executed or loaded: what a bundle must carry."""
        return [f for f in self.files if f.kind == "file" and not (f.written and set(f.uses) <= {"open"})]

    def to_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return asdict(self)


def default_cpu() -> int:
    """The last CPU this process may use (CPU 0 takes most interrupts)."""
    return max(os.sched_getaffinity(0))


def analyse(calls: Sequence[strace.Syscall], cwd: str) -> tuple[list[FileUse], list[FailedLookup]]:
    """Turn parsed syscalls into the files used and the failed look-ups."""
    cwds: dict[int, str] = {}
    first_pid = calls[0].pid if calls else 0
    cwds[first_pid] = cwd
    used: dict[str, set[str]] = {}
    written: set[str] = set()
    failed: dict[str, tuple[set[str], str]] = {}

    for c in calls:
        here = cwds.get(c.pid, cwd)
        if c.name in FORK_CALLS:
            child = c.ret_int
            if child and child > 0:
                cwds[child] = here
            continue
        if c.name in AT_CALLS:
            dir_path = c.fd_path(0)
            if c.args and c.args[0].startswith("AT_FDCWD") and dir_path:
                cwds[c.pid] = here = dir_path  # strace -y shows the cwd: trust it
            raw = c.string_arg(1)
            base = dir_path or here
        else:
            raw = c.string_arg(0)
            base = here
        if c.name == "fchdir":
            p = c.fd_path(0)
            if p and not c.failed:
                cwds[c.pid] = p
            continue
        if raw is None or raw == "":
            continue  # fstatat(fd, "", AT_EMPTY_PATH): a call on an open fd, not a look-up
        path = join_path(base, raw)
        if c.name == "chdir":
            if not c.failed:
                cwds[c.pid] = path
            use = "chdir"
        elif c.name in OPEN_CALLS:
            use = "open"
            if any(flag in " ".join(c.args[1:]) for flag in WRITE_FLAGS):
                written.add(path)
        elif c.name in STAT_CALLS:
            use = "stat"
        elif c.name in EXEC_CALLS:
            use = "exec"
        elif c.name in READLINK_CALLS:
            use = "readlink"
        else:
            use = "other"
        if c.failed:
            uses, errno = failed.setdefault(path, (set(), c.errno or "error"))
            uses.add(use)
        else:
            used.setdefault(path, set()).add(use)

    # The kernel maps the ELF interpreter (and runs #! interpreters) without a traced open.
    for path in [p for p, u in used.items() if "exec" in u]:
        todo = interpreters(path)
        while todo:
            interp = todo.pop()
            if interp not in used:
                used[interp] = {"interp"}
                todo.extend(interpreters(interp))

    files = [_describe(path, tuple(sorted(uses)), path in written) for path, uses in sorted(used.items())]
    # A path that failed once but worked later is not a failed look-up.
    lost = [FailedLookup(p, tuple(sorted(u)), e) for p, (u, e) in sorted(failed.items()) if p not in used]
    return files, lost


def _describe(path: str, uses: tuple[str, ...], written: bool) -> FileUse:
    if path == "/" or any(path == r or path.startswith(r + "/") for r in VIRTUAL_ROOTS):
        return FileUse(path, uses, path, (), "virtual" if path != "/" else "dir", 0, written)
    real, links = resolve_links(path)
    try:
        st = os.stat(real)
    except OSError:
        return FileUse(path, uses, real, tuple(links), "gone", 0, written)
    if stat_mod.S_ISREG(st.st_mode):
        kind, size = "file", st.st_size
    elif stat_mod.S_ISDIR(st.st_mode):
        kind, size = "dir", 0
    else:
        kind, size = "other", 0
    if any(real == r or real.startswith(r + "/") for r in VIRTUAL_ROOTS):
        kind = "virtual"
    return FileUse(path, uses, real, tuple(links), kind, size, written)


def by_top_dir(files: Sequence[FileUse]) -> list[TopDir]:
    """Count and size of the needed regular files per top directory of their real path."""
    acc: dict[str, list[int]] = {}
    seen: set[str] = set()
    for f in files:
        if f.kind != "file" or f.real_path in seen:
            continue
        seen.add(f.real_path)
        top = "/" + f.real_path.strip("/").split("/", 1)[0]
        a = acc.setdefault(top, [0, 0])
        a[0] += 1
        a[1] += f.size
    return [TopDir(t, n, b) for t, (n, b) in sorted(acc.items(), key=lambda kv: -kv[1][1])]


def trace(workload: Workload, executor: Executor, cpu: int | None, seccomp: bool, out_path: str,
          timeout: float | None = None) -> tuple[Any, list[strace.Syscall]]:
    """One traced run through the executor; returns its RunResult and the parsed calls."""
    if strace.strace_path() is None:
        raise PerflabError("strace is not installed: apt-get install strace (or run make lab)")
    spec = workload.spec(
        argv=tuple(strace.strace_argv(out_path, seccomp)) + _argv(workload),
        shell=False, cpus=(cpu,) if cpu is not None else None, timeout=timeout,
    )
    result = executor.run(spec)
    try:
        text = Path(out_path).read_text(errors="replace")
    except OSError:
        text = ""
    return result, strace.parse(text)


def _argv(workload: Workload) -> tuple[str, ...]:
    if workload.shell:
        return ("/bin/sh", "-c", " ".join(workload.argv))
    return tuple(workload.argv)


def run_footprint(config: FootprintConfig, executor: Executor, store: Any,
                  warn: Callable[[str], None] | None = None) -> FootprintResult:
    """Trace the workload, list its files, and measure the tracing overhead; ``warn`` hears, before
    the runs start, what makes the trace slower than it could be (the study prints nothing)."""
    wl = config.workload
    cpu = config.cpu if config.cpu is not None else default_cpu()
    cwd = os.path.abspath(wl.cwd or os.getcwd())
    seccomp = config.seccomp and strace.seccomp_bpf_supported()
    if config.seccomp and not seccomp and warn is not None:
        warn("strace has no --seccomp-bpf here: tracing stops the workload at every system call")
    tmpdir = tempfile.mkdtemp(prefix="perflab-strace-")
    traced: list[float] = []
    untraced: list[float] = []
    calls: list[strace.Syscall] = []
    first_trace: str | None = None
    with store.open_campaign("footprint", {
        "workload": wl.name, "argv": list(_argv(wl)), "cwd": cwd, "cpu": cpu, "seccomp": seccomp,
        "reps": config.reps,
    }) as camp:
        campaign = camp.id
        try:
            # Interleave traced and untraced runs, order shuffled per round, so drift hits both.
            rng = random.Random(0)
            for rep in range(max(1, config.reps)):
                order = ["traced", "untraced"]
                rng.shuffle(order)
                for mode in order:
                    if mode == "traced":
                        out = os.path.join(tmpdir, f"trace{rep}.txt")
                        res, parsed = trace(wl, executor, cpu, seccomp, out, config.timeout)
                        if not calls:
                            calls, first_trace = parsed, out
                    else:
                        res = executor.run(wl.spec(cpus=(cpu,), timeout=config.timeout))
                    store.add_measurement(campaign, res, {"mode": mode, "cpu": cpu}, rep=rep, label=wl.name)
                    if not res.ok:
                        detail = (res.stderr_tail or "").strip().splitlines()[-1:] or [""]
                        raise PerflabError(
                            f"{mode} run of {wl.name} failed (exit {res.exit_code}, signal {res.signal}): "
                            f"{detail[0]}; check that the workload runs on its own first"
                        )
                    (traced if mode == "traced" else untraced).append(res.wall_s)
            files, failed = analyse(calls, cwd)
            top = by_top_dir(files)
            ratio = ci = None
            level = None
            if traced and untraced and min(untraced) > 0:
                ratio, moses = ratio_ci(traced, untraced, CI_LEVEL)
                if min(len(traced), len(untraced)) >= MIN_CI_RUNS:
                    ci, level = (moses.low, moses.high), moses.level
            trace_path = None
            if config.keep_trace and first_trace:
                import shutil

                shutil.copyfile(first_trace, config.keep_trace)
                trace_path = os.path.abspath(config.keep_trace)
                store.add_artifact(campaign, "strace", trace_path, {"syscalls": len(calls)})
            result = FootprintResult(
                workload=wl.name, argv=_argv(wl), cwd=cwd, cpu=cpu, seccomp=seccomp, files=files,
                failed=failed, by_top=top, total_files=sum(t.files for t in top),
                total_bytes=sum(t.bytes for t in top), traced_wall_s=traced, untraced_wall_s=untraced,
                overhead=ratio, overhead_ci=ci, overhead_ci_level=level, campaign_id=campaign, trace_path=trace_path,
                syscalls=len(calls),
            )
            camp.summary = summary_of(result)
            return result
        finally:
            import shutil

            shutil.rmtree(tmpdir, ignore_errors=True)


def summary_of(result: FootprintResult) -> dict[str, Any]:
    d = result.to_dict()
    d["verdict"] = (
        f"{result.total_files} files, {_mib(result.total_bytes)} needed; "
        f"{len(result.failed)} failed look-ups"
        + (f"; tracing costs {result.overhead:.2f}x" if result.overhead else "")
    )
    return d


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"
