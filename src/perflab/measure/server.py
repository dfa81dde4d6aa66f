"""The spawn server (kernels/spawnserver.c): a small C process that starts each timed run.

It spawns, pins and reaps the command and measures it itself (wall time around spawn..reap,
rusage from wait4), so perflab's own Python memory never shows in a small child's max RSS and a
run costs one pipe round trip. Requests and answers go over two pipes; SIGTERM makes it kill the
running command's process group.
"""

from __future__ import annotations

import os
import signal
import struct
import time
from typing import Iterator, Mapping, Sequence

from perflab import kernels
from perflab.errors import PerflabError
from perflab.model import RunResult, RunSpec
from perflab.platform import cache_dir
from perflab.startup import sha256, which


def build_helper(name: str) -> str | None:
    """Path of a C helper from perflab/kernels/NAME.c (static if possible), or None."""
    # The source's path beside the package (an install is plain files): importlib.resources
    # would load zipfile and its readers, ~2.5 ms of every start.
    path = os.path.join(os.path.dirname(kernels.__file__), f"{name}.c")
    # The build cache's key asks `gcc --version` (a process, ~8 ms of every perflab run's
    # start-up): remember the helper by what that answer depends on instead.
    gcc = which("gcc")
    quick = None
    if gcc:
        st = os.stat(gcc)
        with open(path, "rb") as fh:
            source = fh.read()
        digest = sha256(source + f"\0{os.path.realpath(gcc)}\0{st.st_mtime_ns}".encode())
        quick = os.path.join(cache_dir(), "helpers", f"{name}-{digest.hexdigest()[:24]}")
        try:
            with open(quick, encoding="utf-8") as fh:
                known = fh.read().strip()
            if os.access(known, os.X_OK):
                return known
        except OSError:
            pass
    for flags in (("-O2", "-static"), ("-O2",)):
        try:
            # The build cache (kernels.build, pathlib) loads only when a helper is not known yet.
            built = str(kernels.build.build([path], f"perflab-{name}", compiler="gcc", cflags=flags).path)
        except PerflabError:
            continue
        if quick is not None:
            os.makedirs(os.path.dirname(quick), exist_ok=True)
            tmp = f"{quick}.{os.getpid()}"
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(built)
            os.replace(tmp, quick)
        return built
    return None


GROUP_WAIT = 0.01  # s between reads of a batch's answers: ~10 runs of `true` per wake-up


class ServerStopped(PerflabError):
    """The spawn server died (killed, or out of memory): the executor starts a fresh one."""


class Server:
    """The running spawn server and its request/response pipes."""

    def __init__(self, pid: int, req: int, resp: int) -> None:
        self.pid, self.req, self.resp = pid, req, resp
        self._buf = b""
        self.stopped = False
        self._env_at_start = dict(os.environ._data)  # type: ignore[attr-defined]  # the bytes behind os.environ

    @classmethod
    def start(cls, path: str, out: int, err: int, devnull: int) -> "Server":
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

    def _environment(self, extra: Mapping[str, str] | None) -> bytes:
        """The environment block of a request: perflab's own, with the spec's added.

        The server was started with perflab's environment; while that is unchanged (a dict
        compare, ~1 us) an empty block tells it to keep its own, where encoding ~50 variables
        would cost ~100 us per run, a tenth of a run of `true`.
        """
        data = os.environ._data  # type: ignore[attr-defined]  # the bytes behind os.environ
        if not extra and data == self._env_at_start:
            return b"0\0"
        env = dict(data)
        for k, v in (extra or {}).items():
            env[os.fsencode(k)] = os.fsencode(v)
        return str(len(env)).encode() + b"\0" + b"".join(k + b"=" + v + b"\0" for k, v in env.items())

    def request(self, spec: RunSpec, argv: Sequence[str], health: Sequence[str] = ()) -> list[str]:
        """Run one command; the answer's fields (``R start end status ...`` then the health texts)."""
        return next(self.batch(spec, argv, 1, health))[0]

    def batch(self, spec: RunSpec, argv: Sequence[str], count: int, health: Sequence[str] = (),
              journal: str = "", tag: str = "", stamps: str = "") -> Iterator[list[list[str]]]:
        """Run the command up to ``count`` times back to back; yields the fields of the runs
        that have ended, a group at a time.

        Every R line is ``R`` and 11 numbers, then one text per health path (the first line of
        that file right after the reap). With ``stamps`` (an absolute path), stdout goes through
        a pipe the server reads as it arrives, stamping each read into that file
        (measure/series.py reads it). The batch ends early at a failed run. Between groups
        perflab sleeps GROUP_WAIT: one wake-up for many short runs, so perflab's own work
        (parsing, storing) neither competes with the runs for a CPU on every run nor delays the
        next run, which the server starts at once. Closing the generator before the batch is
        over stops the server (SIGTERM kills the running command): no answer is left in the
        pipe for the next request.
        """
        head = [
            str(-1 if spec.timeout is None else max(0, int(spec.timeout * 1000))),
            ",".join(map(str, spec.cpus)) if spec.cpus is not None else "",
            # absolute: the server's own cwd is wherever perflab was when it started it
            os.path.abspath(spec.cwd) if spec.cwd else os.getcwd(),
            os.path.abspath(spec.stdin) if spec.stdin else "",
            ("2" + stamps if stamps else "1") if spec.capture_output else "0",
            str(count), str(len(health)), *health, journal, tag,
        ]
        tail = [str(len(argv)), *argv]
        payload = ("\0".join(head).encode("utf-8", "surrogateescape") + b"\0"
                   + self._environment(spec.env)
                   + "\0".join(tail).encode("utf-8", "surrogateescape") + b"\0")
        os.write(self.req, struct.pack("=I", len(payload)) + payload)
        done = 0
        try:
            while done < count:
                group, error = [], None
                for line in self._read_lines():
                    parts = line.split("\t")
                    fields = parts[0].split()
                    if not fields or fields[0] not in ("R", "E"):
                        raise ServerStopped("perflab's spawn server stopped unexpectedly: rerun; "
                                            "measurements so far are stored")
                    if fields[0] == "E":
                        done, error = count, fields  # the batch is over: the server waits
                        break
                    done += 1
                    group.append(fields + parts[1:])
                    if fields[11] != "0" or fields[3] != "0":
                        done = count  # a failed run (timed out, or non-zero status) ends the batch
                        break
                if group:
                    yield group
                if error is not None:
                    raise_server_error(int(error[1]), int(error[2]), argv[0], spec)
                if done < count:
                    time.sleep(GROUP_WAIT)
        finally:
            if done < count:
                self.stop()  # closed early (Ctrl-C, a failed store write): no stale answers

    def _read_lines(self) -> list[str]:
        """Every complete answer line the server has written, waiting for one if there is none."""
        while b"\n" not in self._buf:
            data = os.read(self.resp, 65536)
            if not data:
                return [""]
            self._buf += data
        *lines, self._buf = self._buf.split(b"\n")
        return [line.decode("utf-8", "replace") for line in lines]

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
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


def decode_status(status: int) -> tuple[int | None, int | None]:
    """(exit code, signal) of a wait status: one of them is None."""
    if os.WIFSIGNALED(status):
        return None, os.WTERMSIG(status)
    return os.WEXITSTATUS(status), None


def record_result(fields: Sequence[str]) -> RunResult:
    """The run an R line's fields describe: ``R START_NS END_NS STATUS UTIME_US STIME_US
    MAXRSS_KB MINFLT MAJFLT NVCSW NIVCSW TIMED_OUT`` (what follows them is health)."""
    start, end, status, ut, st, rss, minflt, majflt, nv, niv, timed = (int(x) for x in fields[1:12])
    # killed by the server's SIGKILL at the timeout
    exit_code, sig = (None, 9) if timed else decode_status(status)
    return RunResult(wall_ns=end - start, user_s=ut / 1e6, sys_s=st / 1e6, maxrss_kb=rss,
                     minflt=minflt, majflt=majflt, nvcsw=nv, nivcsw=niv, exit_code=exit_code,
                     signal=sig, timed_out=bool(timed), start_ns=start, end_ns=end)


def raise_server_error(err: int, stage: int, prog: str, spec: RunSpec) -> None:
    if stage == 1:
        raise PerflabError(f"cannot pin to CPUs {list(spec.cpus or ())} ({os.strerror(err)}): "
                           "choose CPUs that are online and allowed (see perflab machine)")
    if stage == 2:
        raise PerflabError(f"working directory '{spec.cwd}' is unusable ({os.strerror(err)}): fix it")
    if stage == 3:
        raise PerflabError(f"stdin file '{spec.stdin}' cannot be opened ({os.strerror(err)}): fix the path")
    raise_spawn_errno(err, prog)


def raise_spawn_errno(err: int, prog: str) -> None:
    if err == 2:
        raise PerflabError(f"command '{prog}' not found: check the name or PATH")
    if err == 13:
        raise PerflabError(f"command '{prog}' is not executable: chmod +x it or fix the path")
    raise PerflabError(f"cannot start '{prog}': {os.strerror(err)}")
