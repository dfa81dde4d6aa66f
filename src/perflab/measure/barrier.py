"""The start barrier of concurrent copies: each copy waits in a tiny C trampoline on a barrier
pipe; closing the pipe releases every copy at once. Copies are reaped as they exit (pidfd poll) while
their start records are drained from a report pipe, and killed past their timeout.
"""

from __future__ import annotations

import os
import select
import sys
import time
from typing import Protocol, Sequence

from perflab.measure import perfstat
from perflab.measure.interface import ConcurrentResult
from perflab.measure.memory import PssSampler
from perflab.measure.server import build_helper, raise_spawn_errno
from perflab.measure.spawn import base_argv, kill_group, spawn
from perflab.model import RunResult, RunSpec


class CopyHost(Protocol):
    """What the barrier needs of an executor (real.RealExecutor is one); a protocol here, so
    that the barrier does not import the executor that imports it."""

    devnull: int

    def trampoline(self) -> tuple[str, ...] | None: ...

    def full_argv(self, spec: RunSpec, index: int = 0) -> tuple[tuple[str, ...], str | None]: ...

    def finish(self, spec: RunSpec, pid_status: int, ru: object, start_ns: int, end_ns: int,
               timed_out: bool, out_fd: int, err_fd: int, perf_out: str | None,
               record: list[str] | None = None) -> RunResult: ...


# Stand-in for the C trampoline when no compiler is at hand: same barrier and records, but the
# command's rusage then comes from the parent's wait4 (peak RSS includes this Python's).
_PY_TRAMPOLINE = (
    "import os,sys,time\n"
    "g,r=int(sys.argv[1]),int(sys.argv[2])\n"
    "if g>=0:\n os.read(g,1); os.close(g)\n"
    "os.write(r,b'S %d %d\\n'%(os.getpid(),time.monotonic_ns())); os.close(r)\n"
    "os.execvp(sys.argv[3],sys.argv[3:])\n"
)


def spawnrun_trampoline() -> tuple[str, ...] | None:
    """argv prefix of the C barrier trampoline, or None (then a Python stand-in is used)."""
    path = build_helper("spawnrun")
    if path is None:
        perfstat.note_once(
            "no-trampoline", "barrier trampoline not built (no gcc?): using a Python one; "
            "max RSS of concurrent copies then includes perflab's own (install gcc to fix)")
        return None
    return (path,)


def run_released(ex: CopyHost, specs: Sequence[RunSpec], together: bool = True) -> ConcurrentResult:
    """Start every spec behind the barrier (released together) or one after another."""
    if not specs:
        return ConcurrentResult([], 0, time.monotonic_ns(), [], together)
    tramp = ex.trampoline() or (sys.executable, "-c", _PY_TRAMPOLINE)
    bar_r, bar_w = os.pipe()
    if not together:
        # An already-open barrier: each copy passes it at once and still reports its start.
        os.close(bar_w)
        bar_w = -1
    rep_r, rep_w = os.pipe()
    os.set_inheritable(bar_r, True)
    os.set_inheritable(rep_w, True)
    copies: list[dict] = []
    release = 0
    try:
        if not together:
            release = time.monotonic_ns()
        for i, spec in enumerate(specs):
            argv, perf_out = ex.full_argv(spec, i)
            out = os.memfd_create(f"perflab-out{i}") if spec.capture_output else ex.devnull
            err = os.memfd_create(f"perflab-err{i}")
            copies.append(dict(spec=spec, out=out, err=err, perf_out=perf_out, pid=None))
            full = (*tramp, str(bar_r), str(rep_w), *argv)
            copies[-1]["pid"] = spawn(full, env=spec.env, cwd=spec.cwd, cpus=spec.cpus,
                                      stdin_path=spec.stdin, stdout_fd=out, stderr_fd=err)
        os.close(rep_w)
        rep_w = -1
        os.close(bar_r)
        bar_r = -1
        if together:
            release = time.monotonic_ns()
            os.close(bar_w)  # EOF on every copy's barrier read: all released at once
            bar_w = -1
        sampler = PssSampler([c["pid"] for c in copies]).start() if any(
            sp.sample_pss for sp in specs) else None
        try:
            ends, statuses, timed, text = _wait_all(copies, rep_r)
        finally:
            peaks = sampler.stop() if sampler else {}
    except BaseException:
        for c in copies:
            if c["pid"] is not None:
                kill_group(c["pid"])
                try:
                    os.waitpid(c["pid"], 0)
                except ChildProcessError:
                    pass
        raise
    finally:
        for fd in (bar_r, bar_w, rep_w, rep_r):
            if fd >= 0:
                os.close(fd)
    records = _parse_records(text)
    results = []
    start_list = []
    for c in copies:
        pid = c["pid"]
        own_start = records.get(("S", pid), ["", "", str(release)])  # only its start is read
        start_list.append(int(own_start[2]))
        status, ru = statuses[pid]
        err_rec = records.get(("E", pid))
        if err_rec is not None:
            raise_spawn_errno(int(err_rec[2]), base_argv(c["spec"])[0])
        res = ex.finish(c["spec"], status, ru, release, ends[pid], timed[pid],
                        c["out"], c["err"], c["perf_out"], records.get(("R", pid)))
        if (peak := peaks.get(pid)) is not None:
            res.metrics["pss_kb"] = float(peak)  # peak PSS of the command's process tree
        if together:
            # Copies released together are timed from the common release, as the contract says.
            res.wall_ns = res.end_ns - release
            res.start_ns = release
        results.append(res)
        for fd in (c["out"], c["err"]):
            if fd != ex.devnull:
                os.close(fd)
    spread = max(start_list) - min(start_list) if start_list else 0
    return ConcurrentResult(results, spread, release, start_list, together)


def _drain(fd: int) -> str:
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks).decode()


def _parse_records(text: str) -> dict[tuple[str, int], list[str]]:
    out: dict[tuple[str, int], list[str]] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            out[(parts[0], int(parts[1]))] = parts
    return out


def _wait_all(copies: list[dict], rep_r: int) -> tuple[dict, dict, dict, str]:
    """Reap every copy as it exits (pidfd poll), draining the report pipe so no copy blocks on
    it, and killing copies past their timeout."""
    poller = select.poll()
    by_fd: dict[int, dict] = {}
    t0 = time.monotonic()
    for c in copies:
        fd = os.pidfd_open(c["pid"])
        by_fd[fd] = c
        poller.register(fd, select.POLLIN)
    poller.register(rep_r, select.POLLIN)
    os.set_blocking(rep_r, False)
    chunks: list[str] = []
    ends: dict[int, int] = {}
    statuses: dict[int, tuple] = {}
    timed: dict[int, bool] = {c["pid"]: False for c in copies}
    try:
        while by_fd:
            deadlines = [t0 + c["spec"].timeout for c in by_fd.values()
                         if c["spec"].timeout is not None and not timed[c["pid"]]]
            wait_ms = -1
            if deadlines:
                wait_ms = max(0, int((min(deadlines) - time.monotonic()) * 1000) + 1)
            events = poller.poll(wait_ms)
            now = time.monotonic_ns()
            for fd, ev in events:
                if fd == rep_r:
                    text = _drain(rep_r)
                    chunks.append(text)
                    if not text and ev & (select.POLLHUP | select.POLLERR):
                        poller.unregister(rep_r)
                    continue
                c = by_fd.pop(fd)
                poller.unregister(fd)
                os.close(fd)
                _, status, ru = os.wait4(c["pid"], 0)
                ends[c["pid"]] = now
                statuses[c["pid"]] = (status, ru)
            mono = time.monotonic()
            for c in by_fd.values():
                t = c["spec"].timeout
                if t is not None and not timed[c["pid"]] and mono - t0 >= t:
                    kill_group(c["pid"])
                    timed[c["pid"]] = True
        chunks.append(_drain(rep_r))
    finally:
        for fd in by_fd:
            os.close(fd)
    return ends, statuses, timed, "".join(chunks)
