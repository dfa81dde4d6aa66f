"""Executors: run a RunSpec and return what it measured (RealExecutor), or pretend to (Mock).

RealExecutor: posix_spawnp (no shell unless asked), wall time by time.monotonic_ns around
spawn..reap, rusage from wait4 of that very child, output into memfds (no pipe to drain, so no
deadlock and no reader loop skewing the wall time), a timeout by polling a pidfd, optional
``perf stat`` counters. ``run_concurrent`` starts N copies through a tiny C trampoline that
blocks on a gate pipe; closing the pipe releases every copy at once.
"""

from __future__ import annotations

import os
import re
import select
import shlex
import signal
import struct
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

from perflab.errors import PerflabError
from perflab.measure import perfstat
from perflab.measure.memory import PssSampler
from perflab.measure.metrics import extract
from perflab.measure.spawn import base_argv, kill_group, membind_argv, spawn
from perflab.model import RunResult, RunSpec
from perflab.platform.sysfs import Root, format_cpulist, parse_cpulist

TAIL_LINES = 20
_READ_LIMIT = 16 << 20  # keep the last 16 MiB of a stream: summaries come at the end


@dataclass
class ConcurrentResult:
    results: list[RunResult]
    start_spread_ns: int  # max - min of the moments the copies actually started
    release_ns: int  # time.monotonic_ns() when the gate opened (or the first spawn)
    starts_ns: list[int] = field(default_factory=list)  # each copy's own start moment
    gated: bool = True


class Executor(Protocol):
    def run(self, spec: RunSpec) -> RunResult: ...

    def run_concurrent(self, specs: Sequence[RunSpec], gate: bool = True) -> ConcurrentResult: ...


def default_executor() -> "RealExecutor":
    return RealExecutor()


def check_cpus(cpus: Sequence[int] | str, root: Root = Root("/")) -> tuple[int, ...]:
    """Parse/validate a CPU list against the online CPUs and this process's allowed set."""
    if isinstance(cpus, str):
        try:
            parsed = parse_cpulist(cpus)
        except (ValueError, TypeError):
            raise PerflabError(f"CPU list '{cpus}' is malformed: write it like 0,2-3") from None
    else:
        parsed = list(cpus)
    if not parsed:
        raise PerflabError("empty CPU list: give CPUs like 0,2-3")
    online_text = root.read("/sys/devices/system/cpu/online")
    online = set(parse_cpulist(online_text)) if online_text else set(parsed)
    allowed = os.sched_getaffinity(0) if root.is_live else online
    offline = [c for c in parsed if c not in online]
    if offline:
        raise PerflabError(
            f"CPU {format_cpulist(offline)} is offline (online: {format_cpulist(sorted(online))}): "
            "choose online CPUs"
        )
    denied = [c for c in parsed if c not in allowed]
    if denied:
        raise PerflabError(
            f"CPU {format_cpulist(denied)} is not allowed for this process "
            f"(allowed: {format_cpulist(sorted(allowed))}): choose allowed CPUs or widen the cpuset"
        )
    return tuple(dict.fromkeys(parsed))


def _tail(text: str, n: int = TAIL_LINES) -> str:
    lines = text.rstrip("\n").splitlines()
    return "\n".join(lines[-n:])


def _read_fd(fd: int) -> str:
    size = os.fstat(fd).st_size
    if size == 0:
        return ""
    start = max(0, size - _READ_LIMIT)
    return os.pread(fd, size - start, start).decode("utf-8", errors="replace")


def _reset(fd: int) -> None:
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)


def _decode_status(status: int) -> tuple[int | None, int | None]:
    if os.WIFSIGNALED(status):
        return None, os.WTERMSIG(status)
    return os.WEXITSTATUS(status), None


class RealExecutor:
    """Runs specs as real processes: one at a time through the spawn server, concurrent
    copies through the gate trampoline."""

    def __init__(self) -> None:
        # memfds: in-memory files the child writes into; reused (truncated) run after run.
        self._out = os.memfd_create("perflab-stdout")
        self._err = os.memfd_create("perflab-stderr")
        self._devnull = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
        self._tmpdir: str | None = None
        self._tramp: tuple[str, ...] | None | bool = False  # False: not looked up yet
        self._srv: _Server | None | bool = False

    def close(self) -> None:
        self._stop_server()
        for fd in (self._out, self._err, self._devnull):
            try:
                os.close(fd)
            except OSError:
                pass
        if self._tmpdir:
            import shutil

            shutil.rmtree(self._tmpdir, ignore_errors=True)

    def __enter__(self) -> "RealExecutor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @staticmethod
    def now_ns() -> int:
        return time.monotonic_ns()

    def _trampoline(self) -> tuple[str, ...] | None:
        if self._tramp is False:
            self._tramp = spawnrun_trampoline()
        return self._tramp  # type: ignore[return-value]

    def _perf_path(self, index: int = 0) -> str:
        if self._tmpdir is None:
            self._tmpdir = tempfile.mkdtemp(prefix="perflab-perf-")
        return os.path.join(self._tmpdir, f"stat{index}.csv")

    def _argv(self, spec: RunSpec, index: int = 0) -> tuple[tuple[str, ...], str | None]:
        """The full argv to spawn (numactl / perf stat wrappers around the command)."""
        argv = base_argv(spec)
        perf_out = None
        if spec.perf_events is not None:
            perf_out = self._perf_path(index)
            wrapped = perfstat.wrap(argv, spec.perf_events, perf_out)
            if wrapped is None:
                perf_out = None
            else:
                argv = wrapped
        return membind_argv(argv, spec.mem_node), perf_out

    def _finish(
        self, spec: RunSpec, pid_status: int, ru: object, start_ns: int, end_ns: int,
        timed_out: bool, out_fd: int, err_fd: int, perf_out: str | None,
        record: list[str] | None = None,
    ) -> RunResult:
        if record is not None:
            # The trampoline's own measurement of the command: exact rusage, tight wall time.
            (start_ns, end_ns, pid_status, ut, st, rss, minflt, majflt, nv, niv) = (
                int(x) for x in record[2:12])
            user, sys_, maxrss = ut / 1e6, st / 1e6, rss
        else:
            user, sys_, maxrss = ru.ru_utime, ru.ru_stime, ru.ru_maxrss  # type: ignore[attr-defined]
            minflt, majflt = ru.ru_minflt, ru.ru_majflt  # type: ignore[attr-defined]
            nv, niv = ru.ru_nvcsw, ru.ru_nivcsw  # type: ignore[attr-defined]
        exit_code, sig = _decode_status(pid_status)
        result = RunResult(
            wall_ns=end_ns - start_ns, user_s=user, sys_s=sys_, maxrss_kb=maxrss,
            minflt=minflt, majflt=majflt, nvcsw=nv, nivcsw=niv,
            exit_code=exit_code, signal=sig, timed_out=timed_out,
            start_ns=start_ns, end_ns=end_ns,
        )
        if timed_out:
            result.exit_code, result.signal = None, 9
        failed = not result.ok
        if spec.metrics or failed:
            stdout = _read_fd(out_fd) if out_fd != self._devnull else ""
            stderr = _read_fd(err_fd)
            if spec.metrics:
                result.metrics = extract(spec.metrics, stdout, stderr)
            if failed:
                result.stderr_tail = _tail(stderr)
                result.stdout_tail = _tail(stdout, 5)
        if perf_out is not None:
            try:
                with open(perf_out, encoding="utf-8", errors="replace") as fh:
                    counters, unsupported = perfstat.parse(fh.read())
            except OSError:
                counters, unsupported = {}, []
            result.counters = counters
            perfstat.record_unsupported(unsupported)
        return result

    def run(self, spec: RunSpec) -> RunResult:
        argv, perf_out = self._argv(spec)
        out_fd = self._out if spec.capture_output else self._devnull
        if spec.capture_output:
            _reset(self._out)
        _reset(self._err)
        server = self._server()
        if server is None:
            return self._run_direct(spec, argv, perf_out, out_fd)
        env = os.environ if not spec.env else {**os.environ, **spec.env}
        fields = [
            str(-1 if spec.timeout is None else max(0, int(spec.timeout * 1000))),
            ",".join(map(str, spec.cpus)) if spec.cpus is not None else "",
            # absolute: the server's own cwd is wherever perflab was when it started it
            os.path.abspath(spec.cwd) if spec.cwd else os.getcwd(),
            os.path.abspath(spec.stdin) if spec.stdin else "",
            "1" if spec.capture_output else "0",
            str(len(env)), *[f"{k}={v}" for k, v in env.items()],
            str(len(argv)), *argv,
        ]
        payload = "\0".join(fields).encode("utf-8", "surrogateescape") + b"\0"
        try:
            os.write(server.req, struct.pack("=I", len(payload)) + payload)
            line = server.read_line()
        except BaseException:
            # Ctrl-C (or a dead server): SIGTERM makes the server kill the command's group.
            self._stop_server()
            raise
        parts = line.split()
        if not parts or parts[0] not in ("R", "E"):
            self._stop_server()
            raise PerflabError("perflab's spawn server stopped unexpectedly: rerun; "
                               "measurements so far are stored")
        if parts[0] == "E":
            _raise_server_error(int(parts[1]), int(parts[2]), argv[0], spec)
        record = ["R", "0", *parts[1:11]]
        return self._finish(spec, 0, None, 0, 0, parts[11] == "1", out_fd, self._err,
                            perf_out, record)

    def _run_direct(self, spec: RunSpec, argv: tuple[str, ...], perf_out: str | None,
                    out_fd: int) -> RunResult:
        """posix_spawn from Python itself (no compiler for the server): max RSS then includes
        the harness's own peak RSS, because the vfork child shares its mm until exec."""
        start = time.monotonic_ns()
        pid = spawn(argv, env=spec.env, cwd=spec.cwd, cpus=spec.cpus, stdin_path=spec.stdin,
                    stdout_fd=out_fd, stderr_fd=self._err)
        timed_out = False
        try:
            if spec.timeout is None:
                _, status, ru = os.wait4(pid, 0)
            else:
                timed_out = _wait_exit(pid, spec.timeout)
                _, status, ru = os.wait4(pid, 0)
        except BaseException:
            # Ctrl-C reaches only our process group: take the child down with us.
            kill_group(pid)
            os.waitpid(pid, 0)
            raise
        end = time.monotonic_ns()
        return self._finish(spec, status, ru, start, end, timed_out, out_fd, self._err, perf_out)

    # --- the spawn server --------------------------------------------------------------
    def _server(self) -> "_Server | None":
        if self._srv is False:
            self._srv = None
            path = build_helper("spawnserver")
            if path is None:
                perfstat.note_once(
                    "no-server", "spawn helper not built (no gcc?): measuring from Python; "
                    "max RSS then includes perflab's own (install gcc to fix)")
            else:
                self._srv = _Server.start(path, self._out, self._err, self._devnull)
        return self._srv  # type: ignore[return-value]

    def _stop_server(self) -> None:
        if isinstance(self._srv, _Server):
            self._srv.stop()
            self._srv = False  # a later run starts a fresh one

    # --- concurrent copies -------------------------------------------------------------
    def run_concurrent(self, specs: Sequence[RunSpec], gate: bool = True) -> ConcurrentResult:
        """Start every spec, gated (released together) or spawned one after another."""
        if not specs:
            return ConcurrentResult([], 0, time.monotonic_ns(), [], gate)
        tramp = self._trampoline() or (sys.executable, "-c", _PY_TRAMPOLINE)
        gate_r, gate_w = os.pipe()
        if not gate:
            # An already-closed gate: each copy passes it at once and still reports its start.
            os.close(gate_w)
            gate_w = -1
        rep_r, rep_w = os.pipe()
        os.set_inheritable(gate_r, True)
        os.set_inheritable(rep_w, True)
        copies: list[dict] = []
        release = 0
        try:
            if not gate:
                release = time.monotonic_ns()
            for i, spec in enumerate(specs):
                argv, perf_out = self._argv(spec, i)
                out = os.memfd_create(f"perflab-out{i}") if spec.capture_output else self._devnull
                err = os.memfd_create(f"perflab-err{i}")
                copies.append(dict(spec=spec, out=out, err=err, perf_out=perf_out, pid=None))
                # Without a gate the copy still reports its start ("S"): gate fd of a closed pipe.
                full = (*tramp, str(gate_r), str(rep_w), *argv)
                copies[-1]["pid"] = spawn(full, env=spec.env, cwd=spec.cwd, cpus=spec.cpus,
                                          stdin_path=spec.stdin, stdout_fd=out, stderr_fd=err)
            os.close(rep_w)
            rep_w = -1
            os.close(gate_r)
            gate_r = -1
            if gate:
                release = time.monotonic_ns()
                os.close(gate_w)  # EOF on every copy's gate read: all released at once
                gate_w = -1
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
            for fd in (gate_r, gate_w, rep_w, rep_r):
                if fd >= 0:
                    os.close(fd)
        records = _parse_records(text)
        results = []
        start_list = []
        for c in copies:
            pid = c["pid"]
            own_start = records.get(("S", pid), [None, None, str(release)])
            start_list.append(int(own_start[2]))
            status, ru = statuses[pid]
            rec = records.get(("R", pid))
            _raise_spawn_error(records.get(("E", pid)), base_argv(c["spec"])[0])
            res = self._finish(c["spec"], status, ru, release, ends[pid], timed[pid],
                               c["out"], c["err"], c["perf_out"], rec)
            if peaks.get(pid) is not None:
                res.metrics["pss_kb"] = float(peaks[pid])  # peak PSS of the command's process tree
            if gate:
                # Gated copies are timed from the common release, as the contract says.
                res.wall_ns = res.end_ns - release
                res.start_ns = release
            results.append(res)
            for fd in (c["out"], c["err"]):
                if fd != self._devnull:
                    os.close(fd)
        spread = max(start_list) - min(start_list) if start_list else 0
        return ConcurrentResult(results, spread, release, start_list, gate)


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


def _raise_spawn_error(record: list[str] | None, prog: str) -> None:
    if record is None:
        return
    err = int(record[2])
    if err == 2:
        raise PerflabError(f"command '{prog}' not found: check the name or PATH")
    if err == 13:
        raise PerflabError(f"command '{prog}' is not executable: chmod +x it or fix the path")
    raise PerflabError(f"cannot start '{prog}': {os.strerror(err)}")


def _wait_exit(pid: int, timeout: float) -> bool:
    """Wait up to ``timeout`` s for the child to exit; on expiry kill its group. True if killed."""
    pidfd = os.pidfd_open(pid)
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        if poller.poll(max(0, int(timeout * 1000))):
            return False
        kill_group(pid)
        return True
    finally:
        os.close(pidfd)


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


# Stand-in for the C trampoline when no compiler is at hand: same gate and records, but the
# command's rusage then comes from the parent's wait4 (peak RSS includes this Python's).
_PY_TRAMPOLINE = (
    "import os,sys,time\n"
    "g,r=int(sys.argv[1]),int(sys.argv[2])\n"
    "if g>=0:\n os.read(g,1); os.close(g)\n"
    "os.write(r,b'S %d %d\\n'%(os.getpid(),time.monotonic_ns())); os.close(r)\n"
    "os.execvp(sys.argv[3],sys.argv[3:])\n"
)


def build_helper(name: str) -> str | None:
    """Path of a C helper from perflab/kernels/NAME.c (static if possible), or None."""
    from importlib import resources

    from perflab.kernels.build import build

    src = resources.files("perflab.kernels").joinpath(f"{name}.c")
    with resources.as_file(src) as path:
        for flags in (("-O2", "-static"), ("-O2",)):
            try:
                return str(build([path], f"perflab-{name}", compiler="gcc", cflags=flags).path)
            except PerflabError:
                continue
    return None


def spawnrun_trampoline() -> tuple[str, ...] | None:
    """argv prefix of the C gate trampoline, or None (then a Python stand-in is used)."""
    path = build_helper("spawnrun")
    if path is None:
        perfstat.note_once(
            "no-trampoline", "gate trampoline not built (no gcc?): using a Python one; "
            "max RSS of concurrent copies then includes perflab's own (install gcc to fix)")
        return None
    return (path,)


class _Server:
    """The running spawn server (kernels/spawnserver.c) and its request/response pipes."""

    def __init__(self, pid: int, req: int, resp: int) -> None:
        self.pid, self.req, self.resp = pid, req, resp
        self._buf = b""

    @classmethod
    def start(cls, path: str, out: int, err: int, devnull: int) -> "_Server":
        import fcntl

        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        # Duplicate every source above 9 first so the dup2s into 0..5 cannot clobber a source.
        src = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (req_r, resp_w, out, err, devnull)]
        actions = [(os.POSIX_SPAWN_DUP2, s, t) for s, t in zip(src, (0, 1, 3, 4, 5))]
        try:
            pid = os.posix_spawn(path, [path], os.environ, file_actions=actions,
                                 setsigdef=(signal.SIGPIPE, signal.SIGXFSZ))
        finally:
            for fd in (*src, req_r, resp_w):
                os.close(fd)
        return cls(pid, req_w, resp_r)

    def read_line(self) -> str:
        while b"\n" not in self._buf:
            data = os.read(self.resp, 4096)
            if not data:
                return ""
            self._buf += data
        line, _, self._buf = self._buf.partition(b"\n")
        return line.decode()

    def stop(self) -> None:
        for fd in (self.req, self.resp):
            try:
                os.close(fd)
            except OSError:
                pass
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


def _raise_server_error(err: int, stage: int, prog: str, spec: RunSpec) -> None:
    if stage == 1:
        raise PerflabError(f"cannot pin to CPUs {list(spec.cpus or ())} ({os.strerror(err)}): "
                           "choose CPUs that are online and allowed (see perflab machine)")
    if stage == 2:
        raise PerflabError(f"working directory '{spec.cwd}' is unusable ({os.strerror(err)}): fix it")
    if stage == 3:
        raise PerflabError(f"stdin file '{spec.stdin}' cannot be opened ({os.strerror(err)}): fix the path")
    if err == 2:
        raise PerflabError(f"command '{prog}' not found: check the name or PATH")
    if err == 13:
        raise PerflabError(f"command '{prog}' is not executable: chmod +x it or fix the path")
    raise PerflabError(f"cannot start '{prog}': {os.strerror(err)}")


# --- the deterministic mock -------------------------------------------------------------
_SLEEP = re.compile(r"^\s*sleep\s+([0-9.]+)\s*$")


def _mock_seconds(spec: RunSpec) -> tuple[float, int]:
    """``sleep X`` takes X s; ``false`` and ``exit N`` fail; anything else takes 0 s."""
    cmd = " ".join(spec.argv) if spec.shell else shlex.join(spec.argv)
    m = _SLEEP.match(cmd)
    if m:
        return float(m.group(1)), 0
    if cmd.strip() == "false":
        return 0.0, 1
    m = re.match(r"^\s*exit\s+(\d+)\s*$", cmd)
    if m:
        return 0.0, int(m.group(1))
    return 0.0, 0


class MockExecutor:
    """Deterministic executor for tests: virtual time, exact rusage, every spec recorded.

    ``model(spec)`` may return a RunResult (used as is) or seconds of wall time. The fake
    rusage of a run of X s: user 0.9 X, sys 0.05 X, maxrss 1024 KiB, minflt 100.
    """

    def __init__(self, model: Callable[[RunSpec], RunResult | float] | None = None) -> None:
        self.model = model
        self.calls: list[RunSpec] = []
        self.clock_ns = 0

    def now_ns(self) -> int:
        return self.clock_ns

    def _result(self, spec: RunSpec, start: int) -> RunResult:
        exit_code = 0
        if self.model is not None:
            out = self.model(spec)
            if isinstance(out, RunResult):
                return out
            seconds = float(out)
        else:
            seconds, exit_code = _mock_seconds(spec)
        wall = round(seconds * 1e9)
        return RunResult(
            wall_ns=wall, user_s=0.9 * seconds, sys_s=0.05 * seconds, maxrss_kb=1024,
            minflt=100, majflt=0, nvcsw=1, nivcsw=0, exit_code=exit_code,
            start_ns=start, end_ns=start + wall,
            stderr_tail="" if exit_code == 0 else f"mock: exit {exit_code}",
        )

    def run(self, spec: RunSpec) -> RunResult:
        self.calls.append(spec)
        res = self._result(spec, self.clock_ns)
        self.clock_ns += res.wall_ns
        return res

    def run_concurrent(self, specs: Sequence[RunSpec], gate: bool = True) -> ConcurrentResult:
        start = self.clock_ns
        results = []
        for spec in specs:
            self.calls.append(spec)
            results.append(self._result(spec, start))
        self.clock_ns = start + max((r.wall_ns for r in results), default=0)
        return ConcurrentResult(results, 0, start, [start] * len(results), gate)
