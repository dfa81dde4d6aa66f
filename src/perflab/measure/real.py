"""The real executor: runs specs as processes and measures them.

posix_spawnp (no shell unless asked), wall time by time.monotonic_ns around spawn..reap, rusage
from wait4 of that very child, output into memfds (no pipe to drain, so no deadlock and no reader
loop skewing the wall time), a timeout by polling a pidfd, optional ``perf stat`` counters. One
run at a time goes through the spawn server (server.py); concurrent copies through the start
barrier (barrier.py).
"""

from __future__ import annotations

# tempfile is imported in the functions that use it: `perflab run` starts without it
# (bench/startup.sh).
import os
import select
import time
from typing import Generator, Iterator, Sequence

from perflab.errors import PerflabError
from perflab.measure import perfstat
from perflab.measure.barrier import run_released, spawnrun_trampoline
from perflab.measure.health import HealthProbe
from perflab.measure.interface import ConcurrentResult, RealClock
from perflab.measure.journal import Journal
from perflab.measure.metrics import extract, note_series
from perflab.measure.series import encode, extract_series, read_stamps, run_metrics
from perflab.measure.server import Server, ServerStopped, build_helper, decode_status, record_result
from perflab.measure.spawn import base_argv, kill_group, membind_argv, spawn
from perflab.model import RunResult, RunSpec
from perflab.platform.affinity import usable_cpus
from perflab.platform.sysfs import Root, format_cpulist, parse_cpulist

TAIL_LINES = 20
_READ_LIMIT = 16 << 20  # keep the last 16 MiB of a stream: summaries come at the end


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
    # A snapshot without an online list: the CPUs asked for stand for it (online above).
    allowed = set(usable_cpus(root)) or online
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


class RealExecutor(RealClock):
    """Runs specs as real processes: one at a time through the spawn server, concurrent
    copies through the barrier trampoline."""

    live = True  # measures this machine (the mock does not)

    def __init__(self, root: Root = Root("/")) -> None:
        self.root = root
        # Its first sample marks the start of the first run's interval.
        self._health: HealthProbe | None = HealthProbe(root)
        # An unpinned run may use any allowed CPU: sample them all where that stays cheap (one
        # pread each); on a big machine only pinned runs get frequencies and throttle counts.
        allowed = usable_cpus(root) if root.is_live else ()
        self._unpinned = tuple(allowed) if len(allowed) <= 16 else ()
        # memfds: in-memory files the child writes into; reused (truncated) run after run.
        self._out = os.memfd_create("perflab-stdout")
        self._err = os.memfd_create("perflab-stderr")
        self.devnull = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
        self._tmpdir: str | None = None
        self._tramp: tuple[str, ...] | None | bool = False  # False: not looked up yet
        self._srv: Server | None | bool = False

    def close(self) -> None:
        self._stop_server()
        if self._health is not None:
            self._health.close()
        for fd in (self._out, self._err, self.devnull):
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

    def trampoline(self) -> tuple[str, ...] | None:
        if self._tramp is False:
            self._tramp = spawnrun_trampoline()
        return self._tramp  # type: ignore[return-value]  # False only before the first call, replaced above

    def _perf_path(self, index: int = 0) -> str:
        import tempfile
        if self._tmpdir is None:
            self._tmpdir = tempfile.mkdtemp(prefix="perflab-perf-")
        return os.path.join(self._tmpdir, f"stat{index}.csv")

    @property
    def _stamps(self) -> str:
        """Where the spawn server writes a series run's arrival stamps (absolute, reused)."""
        return os.path.abspath(self._perf_path().replace("stat0.csv", "stamps.bin"))

    def full_argv(self, spec: RunSpec, index: int = 0) -> tuple[tuple[str, ...], str | None]:
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

    def finish(
        self, spec: RunSpec, pid_status: int, ru: object, start_ns: int, end_ns: int,
        timed_out: bool, out_fd: int, err_fd: int, perf_out: str | None,
        record: list[str] | None = None, stamped: bool = False,
    ) -> RunResult:
        """A RunResult from a reaped child (or a helper's record of it: R, pid, then the fields
        of the server's R line up to NIVCSW; ``timed_out`` apart)."""
        if record is not None:
            # The helper's own measurement of the command: exact rusage, tight wall time.
            result = record_result(["R", *record[2:12], "1" if timed_out else "0"])
        else:
            exit_code, sig = decode_status(pid_status)
            result = RunResult(
                wall_ns=end_ns - start_ns, user_s=ru.ru_utime, sys_s=ru.ru_stime,  # type: ignore[attr-defined]  # ru is the rusage the wait returned
                maxrss_kb=ru.ru_maxrss, minflt=ru.ru_minflt, majflt=ru.ru_majflt,  # type: ignore[attr-defined]  # as above
                nvcsw=ru.ru_nvcsw, nivcsw=ru.ru_nivcsw,  # type: ignore[attr-defined]  # as above
                exit_code=exit_code, signal=sig, timed_out=timed_out, start_ns=start_ns, end_ns=end_ns,
            )
            if timed_out:
                result.exit_code, result.signal = None, 9
        failed = not result.ok
        if spec.metrics or spec.series or failed:
            stdout = _read_fd(out_fd) if out_fd != self.devnull else ""
            stderr = _read_fd(err_fd)
            if spec.metrics:
                result.metrics = extract(spec.metrics, stdout, stderr)
            if spec.series and out_fd != self.devnull:
                self._series(spec, result, out_fd, stamped)
            if failed:
                result.stderr_tail = _tail(stderr)
                result.stdout_tail = _tail(stdout, 5)
        if perf_out is not None:
            try:
                with open(perf_out, encoding="utf-8", errors="replace") as fh:
                    counters, unsupported = perfstat.as_asked(*perfstat.parse(fh.read()), spec.perf_events)  # type: ignore[arg-type]  # a perf output only where events were asked
            except OSError:
                counters, unsupported = {}, []
            result.counters = counters
            perfstat.record_unsupported(unsupported)
        return result

    def _series(self, spec: RunSpec, result: RunResult, out_fd: int, stamped: bool) -> None:
        """The run's event lines (all of stdout, not its tail) as its series and series metrics."""
        size = os.fstat(out_fd).st_size
        text = os.pread(out_fd, size, 0).decode("utf-8", errors="replace") if size else ""
        stamps = read_stamps(self._stamps) if stamped else ()
        events = extract_series(spec.series, text, result.start_ns, stamps)
        found = run_metrics(events, result.wall_s, spec.skip_events) if len(events) else {}
        if len(events):
            result.series = encode(events)
            result.metrics.update(found)
        why = ("the series regex matched too few event lines; check it against the output" if len(events) < 3
               else "its lines give no event times and these runs have no arrival stamps (copies run "
                    "together, or no spawn server): add (?P<ms>...) with the time the program prints")
        note_series("steady_rate" in found, why)

    def health(self, result: RunResult, cpus: Sequence[int] | None) -> RunResult:
        """Attach the machine's health over the run (and whether it makes the run suspect)."""
        result.health, result.suspect = self._probe().sample(tuple(cpus or self._unpinned))
        return result

    def _probe(self) -> HealthProbe:
        if self._health is None:
            self._health = HealthProbe(self.root)
        return self._health

    def run(self, spec: RunSpec) -> RunResult:
        server = self._server()
        argv, perf_out = self.full_argv(spec)
        if server is not None:
            return next(self._batch(server, spec, argv, perf_out, 1))[0]
        out_fd = self._out if spec.capture_output else self.devnull
        if spec.capture_output:
            _reset(self._out)
        _reset(self._err)
        return self.health(self._run_direct(spec, argv, perf_out, out_fd), spec.cpus)

    def can_batch(self, spec: RunSpec) -> bool:
        """Whether runs of ``spec`` can go back to back in the server: nothing of a run is read
        after it but what the server answers (no metrics or series from stdout, no perf stat file)."""
        return not spec.metrics and not spec.series and spec.perf_events is None and self._server() is not None

    def run_batch(self, spec: RunSpec, count: int, journal: Journal | None = None,
                  key: tuple[int, str, dict, int] | None = None) -> Generator[list[RunResult], None, None]:
        """Up to ``count`` runs of ``spec`` back to back in the spawn server, yielded in groups
        as they end (server.batch), each with its health read by the server right after it. The
        batch ends at a failed run (whose output is then still in the memfds). With ``journal``,
        the server appends each run's record to it before it starts the next; ``key``
        (campaign, label, params, first rep) names the runs there (journal.py). Only for a spec
        that ``can_batch``."""
        server = self._server()
        if server is None or not self.can_batch(spec):
            raise ValueError("run_batch needs the spawn server and a spec without metrics or counters")
        argv, perf_out = self.full_argv(spec)
        tag = Journal.tag(*key, tuple(spec.cpus or self._unpinned)) if journal and key else ""
        yield from self._batch(server, spec, argv, perf_out, count, journal.path if journal else "", tag)

    def _batch(self, server: Server, spec: RunSpec, argv: tuple[str, ...], perf_out: str | None,
               count: int, journal: str = "", tag: str = "") -> Iterator[list[RunResult]]:
        cpus = tuple(spec.cpus or self._unpinned)
        out_fd = self._out if spec.capture_output else self.devnull
        stamps = self._stamps if spec.series and spec.capture_output else ""
        try:
            for group in server.batch(spec, argv, count, self._probe().paths(cpus), journal, tag, stamps):
                results = []
                for parts in group:
                    result = self.finish(spec, 0, None, 0, 0, parts[11] == "1", out_fd, self._err,
                                         perf_out, ["R", "0", *parts[1:11]], stamped=bool(stamps))
                    result.health, result.suspect = self._probe().sample_texts(parts[12:], result.end_ns, cpus)
                    results.append(result)
                yield results
        except ServerStopped:
            self._stop_server()
            raise
        except PerflabError:
            raise  # the command could not start; the server is fine
        except BaseException:
            # Ctrl-C (or a dead server): SIGTERM makes the server kill the command's group.
            self._stop_server()
            raise

    def capture(self, spec: RunSpec) -> tuple[RunResult, str]:
        """Run once keeping the whole output (the last 16 MiB of each stream): stdout + stderr."""
        if not spec.capture_output:
            spec = RunSpec(**{**spec.__dict__, "capture_output": True})
        result = self.run(spec)
        return result, _read_fd(self._out) + _read_fd(self._err)

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
        return self.finish(spec, status, ru, start, end, timed_out, out_fd, self._err, perf_out)

    def _server(self) -> Server | None:
        if isinstance(self._srv, Server) and self._srv.stopped:
            self._srv = False  # stopped mid-batch: a fresh one
        if self._srv is False:
            self._srv = None
            path = build_helper("spawnserver")
            if path is None:
                perfstat.note_once(
                    "no-server", "spawn helper not built (no gcc?): measuring from Python; "
                    "max RSS then includes perflab's own (install gcc to fix)")
            else:
                self._srv = Server.start(path, self._out, self._err, self.devnull)
        return self._srv  # type: ignore[return-value]  # never False here: replaced above

    def _stop_server(self) -> None:
        if isinstance(self._srv, Server):
            self._srv.stop()
            self._srv = False  # a later run starts a fresh one

    def run_concurrent(self, specs: Sequence[RunSpec], together: bool = True) -> ConcurrentResult:
        """Start every spec behind the start barrier (released together) or one after another."""
        if self._health is None:
            self._health = HealthProbe(self.root)
        out = run_released(self, specs, together)
        cpus = sorted({c for spec in specs for c in (spec.cpus or ())})
        health, suspect = self._health.sample(cpus)
        for res in out.results:
            res.health, res.suspect = dict(health), suspect
        return out


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
