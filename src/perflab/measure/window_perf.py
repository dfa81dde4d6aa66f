"""The real window recorder: perf record, and the marker loop that reads lines, writes
enable/disable to perf's control fifo and waits for the ack.

perflab reads the workload's output live, through a pty (C stdio then line-buffers, as on a
terminal) or a log file watched with inotify, and writes ``enable`` / ``disable`` to perf's control
fifo when the start / stop marker lines appear, waiting for perf's ``ack`` each time. Timestamps
are CLOCK_MONOTONIC on both sides (``perf record -k CLOCK_MONOTONIC``), so samples can be checked
against the window. Attached to a running process, the log is read from its end at the attach
(earlier markers belong to the past) and perf is stopped with SIGINT once the window closes.
"""

from __future__ import annotations

import ctypes
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from perflab.errors import PerflabError
from perflab.measure.spawn import base_argv
from perflab.measure.window import (
    ACK_TIMEOUT_S, WindowRecording, WindowRequest, perf_path, perf_record_argv,
)
from perflab.model import RunSpec
from perflab.startup import which

RT_PRIORITY = 10
_PERF_LINES = ("Events disabled", "Events enabled")


class _LineSource:
    """Lines from a pty/pipe fd or from a growing log file, split at newlines."""

    def __init__(self) -> None:
        self._buf = b""

    def feed(self, data: bytes) -> list[str]:
        self._buf += data
        *lines, self._buf = self._buf.split(b"\n")
        return [ln.decode(errors="replace").rstrip("\r") for ln in lines]

    def flush(self) -> list[str]:
        rest, self._buf = self._buf, b""
        return [rest.decode(errors="replace").rstrip("\r")] if rest else []


class _Inotify:
    """Minimal ctypes inotify on a log file's directory (IN_MODIFY | IN_CREATE)."""

    IN_MODIFY, IN_CREATE = 0x2, 0x100

    def __init__(self, directory: str) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        wd = libc.inotify_add_watch(self.fd, directory.encode(), self.IN_MODIFY | self.IN_CREATE)
        if wd < 0:
            os.close(self.fd)
            raise OSError(ctypes.get_errno(), "inotify_add_watch")

    def drain(self) -> None:
        try:
            while os.read(self.fd, 65536):
                pass
        except BlockingIOError:
            pass

    def close(self) -> None:
        os.close(self.fd)


class _Loop:
    """One recording: perf's process, its control fifos, the line sources and the window state."""

    def __init__(self, proc: subprocess.Popen, ctl_fd: int, ack_fd: int, request: WindowRequest,
                 rec: WindowRecording) -> None:
        self.proc, self.ctl_fd, self.ack_fd, self.req, self.rec = proc, ctl_fd, ack_fd, request, rec
        w = request.window
        self.start_re = re.compile(w.start) if w.start else None
        self.stop_re = re.compile(w.stop) if w.stop else None
        self.open = self.closed = False

    def command(self, cmd: bytes) -> int | None:
        """Send a control command; the ack time, or None when perf has already exited."""
        if cmd == b"enable":
            self.rec.enable_sent_ns = time.monotonic_ns()
        os.write(self.ctl_fd, cmd + b"\n")
        end = time.monotonic() + ACK_TIMEOUT_S
        got = b""
        while b"\n" not in got:
            left = end - time.monotonic()
            if self.proc.poll() is not None:
                return None  # the run (and perf) ended first: a marker printed at the very end
            if left <= 0:
                raise PerflabError(
                    f"perf record did not acknowledge '{cmd.decode()}' within {ACK_TIMEOUT_S:g} s; "
                    "check that perf supports --control (perf >= 5.10)")
            r, _, _ = select.select([self.ack_fd], [], [], min(left, 0.05))
            if r:
                try:
                    got += os.read(self.ack_fd, 64)
                except BlockingIOError:
                    pass
        return time.monotonic_ns()

    def open_window(self, line: str | None, t_read: int) -> None:
        self.rec.start_marker_ns = t_read
        self.rec.start_line = line or ""
        self.rec.enabled_ns = self.command(b"enable")
        if self.rec.enabled_ns is None:
            self.closed = True
            self.rec.closed_by = "run ended before perf acknowledged enable"
            return
        self.open = True

    def close_window(self, how: str, line: str | None, t_read: int) -> None:
        self.rec.stop_marker_ns = t_read if how == "stop marker" else None
        self.rec.stop_line = line or ""
        self.rec.disabled_ns = self.command(b"disable") or time.monotonic_ns()
        self.rec.closed_by = how
        self.open, self.closed = False, True

    def markers(self, lines: list[str], t_read: int) -> None:
        for line in lines:
            if self.closed:
                return
            if not self.open and self.start_re is not None and self.start_re.search(line):
                self.open_window(line, t_read)
            elif self.open and self.stop_re is not None and self.stop_re.search(line):
                self.close_window("stop marker", line, t_read)

    def timed(self, now: int) -> float:
        """Open/close a time window when due; how long select may wait for the next due time."""
        w, wait = self.req.window, 0.05
        if self.closed:
            return wait
        if not self.open and self.start_re is None:
            at = self.rec.launch_ns + int((w.after or 0.0) * 1e9)
            if now >= at:
                self.open_window(None, now)
            else:
                return min(wait, (at - now) / 1e9)
        if self.open and self.stop_re is None and w.duration is not None:
            assert self.rec.enabled_ns is not None
            at = self.rec.enabled_ns + int(w.duration * 1e9)
            if now >= at:
                self.close_window("duration", None, now)
            else:
                return min(wait, (at - now) / 1e9)
        return wait


def record(perf: str, spec: RunSpec, request: WindowRequest, realtime: bool = True) -> WindowRecording:
    """Record one window: launch the spec under perf, or attach perf to request.attach."""
    tmp = tempfile.mkdtemp(prefix="perflab-ctl-")
    ctl, ack = os.path.join(tmp, "ctl"), os.path.join(tmp, "ack")
    os.mkfifo(ctl)
    os.mkfifo(ack)
    # O_RDWR on a fifo never blocks on Linux: perflab cannot hang if perf dies before opening it.
    ctl_fd = os.open(ctl, os.O_RDWR)
    ack_fd = os.open(ack, os.O_RDWR | os.O_NONBLOCK)
    attach = bool(request.attach)
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(spec.env or {})}
    workload: list[str] = []
    if not attach:
        workload = list(base_argv(spec))
        if spec.cpus:
            workload = ["taskset", "-c", ",".join(map(str, spec.cpus)), *workload]
        if not request.use_pty and which("stdbuf"):
            # On a pipe, C stdio would block-buffer: ask for line buffering.
            workload = ["stdbuf", "-oL", "-eL", *workload]
    argv = perf_record_argv(perf, request, ctl, ack, workload)
    rt = realtime and _can_realtime()
    if rt:
        # On a busy machine the enable/ack round trip waits for a CPU twice (perf, then perflab):
        # run perf (and perflab's reader) SCHED_FIFO; -R keeps a launched workload SCHED_OTHER.
        argv = ["chrt", "-f", "-R", str(RT_PRIORITY), *argv]
    if request.use_pty and not attach:
        import pty
        import tty

        master, slave = pty.openpty()
        tty.setraw(slave)  # no \n -> \r\n, no echo
    else:
        master, slave = os.pipe()

    log_file = request.log_file
    inotify: _Inotify | None = None
    log_fh = None
    log_src = _LineSource()
    if log_file:
        try:
            inotify = _Inotify(str(Path(log_file).parent.resolve()))
        except (OSError, AttributeError):
            inotify = None  # polling fallback below
        if attach and os.path.exists(log_file):
            log_fh = open(log_file, "rb")
            log_fh.seek(0, os.SEEK_END)  # markers already written belong to the past
    out_fh = open(request.output_log, "w") if request.output_log else None
    launch = time.monotonic_ns()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env,
                            cwd=None if attach else spec.cwd, start_new_session=True)
    os.close(slave)
    saved_policy = _enter_realtime() if rt else None
    rec = WindowRecording(perf_data=request.perf_data, exit_code=None, launch_ns=launch, end_ns=0,
                          attached=tuple(request.attach))
    loop = _Loop(proc, ctl_fd, ack_fd, request, rec)
    if request.window.whole_run:
        rec.enable_sent_ns = rec.enabled_ns = launch  # perf counts from the exec / the attach
        rec.closed_by, loop.open = "end of run", True
    deadline = launch + int(request.timeout * 1e9) if request.timeout else None
    src = _LineSource()

    def output(lines: list[str], t_read: int) -> None:
        for line in lines:
            if line.startswith("[ perf record:") or line.strip() in _PERF_LINES or line.startswith("Warning:"):
                rec.perf_messages.append(line)
                continue
            if out_fh:
                out_fh.write(line + "\n")
            rec.output_tail.append(line)
            del rec.output_tail[:-40]
        if not log_file:
            loop.markers(lines, t_read)

    stopping = False
    try:
        eof = False
        while not eof:
            now = time.monotonic_ns()
            wait = loop.timed(now)
            if deadline and now > deadline:
                rec.timed_out = True
                if attach:
                    if loop.open:
                        loop.close_window("timeout", None, now)
                    loop.closed = True
                else:
                    os.killpg(proc.pid, signal.SIGTERM)
                deadline = None
            if attach and loop.closed and not stopping:
                proc.send_signal(signal.SIGINT)  # perf writes its data and exits
                stopping = True
            fds = [master] + ([inotify.fd] if inotify else [])
            if log_file and not inotify:
                wait = min(wait, 0.001)  # polling fallback: 1 ms
            r, _, _ = select.select(fds, [], [], max(0.0, wait))
            t_read = time.monotonic_ns()
            if master in r:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: every holder of the pty slave has exited
                    data = b""
                if not data:
                    eof = True
                    output(src.flush(), t_read)
                else:
                    output(src.feed(data), t_read)
            if log_file:
                if inotify and inotify.fd in r:
                    inotify.drain()
                if log_fh is None and os.path.exists(log_file):
                    log_fh = open(log_file, "rb")
                if log_fh is not None:
                    chunk = log_fh.read()
                    if chunk:
                        loop.markers(log_src.feed(chunk), t_read)
        if log_fh is not None:
            loop.markers(log_src.feed(log_fh.read()) + log_src.flush(), time.monotonic_ns())
        if loop.open and proc.poll() is None:
            try:
                loop.close_window("end of run", None, time.monotonic_ns())
            except PerflabError:
                pass
        rc = proc.wait()
        rec.end_ns = time.monotonic_ns()
        if loop.open:
            rec.disabled_ns, rec.closed_by = rec.end_ns, "end of run"
        # perf stopped by our SIGINT exits 0 or by that signal: the recording is complete.
        rec.exit_code = 0 if stopping and rc in (0, -signal.SIGINT, 128 + signal.SIGINT) else rc
    except BaseException:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT if attach else signal.SIGKILL)
            proc.wait()
        raise
    finally:
        if saved_policy is not None:
            _leave_realtime(saved_policy)
        for fd in (master, ctl_fd, ack_fd):
            try:
                os.close(fd)
            except OSError:
                pass
        for fh in (inotify, log_fh, out_fh):
            if fh is not None:
                fh.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return rec


def _can_realtime() -> bool:
    """SCHED_FIFO needs root or CAP_SYS_NICE (and chrt); without it the window still works."""
    if which("chrt") is None or not hasattr(os, "SCHED_FIFO"):
        return False
    try:
        policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
        os.sched_setscheduler(0, os.SCHED_FIFO | os.SCHED_RESET_ON_FORK, os.sched_param(RT_PRIORITY))
        os.sched_setscheduler(0, policy, param)
        return True
    except (OSError, PermissionError):
        return False


def _enter_realtime() -> tuple[int, os.sched_param] | None:
    try:
        saved = (os.sched_getscheduler(0), os.sched_getparam(0))
        os.sched_setscheduler(0, os.SCHED_FIFO | os.SCHED_RESET_ON_FORK, os.sched_param(RT_PRIORITY))
        return saved
    except OSError:
        return None


def _leave_realtime(saved: tuple[int, os.sched_param]) -> None:
    try:
        os.sched_setscheduler(0, saved[0], saved[1])
    except OSError:
        pass


class PerfWindowRecorder:
    """Records windows with the real perf (see window_loop for the marker loop)."""

    def __init__(self, perf: str = "perf", realtime: bool = True) -> None:
        self.perf = perf
        self.realtime = realtime

    def __enter__(self) -> "PerfWindowRecorder":
        return self

    def __exit__(self, *exc: object) -> None:
        """Nothing to release: each recording cleans up its own fifos and processes."""

    def record_window(self, spec: RunSpec, request: WindowRequest) -> WindowRecording:
        return record(perf_path(self.perf), spec, request, realtime=self.realtime)

    def perf_script(self, perf_data: str, fields_: str, chains: bool = False) -> str:
        """`perf script` text of a recording (names left mangled; call chains hidden unless asked)."""
        res = subprocess.run(
            [perf_path(self.perf), "script", "-i", perf_data, "--ns", "--no-demangle",
             *(() if chains else ("-G",)), "-F", fields_], capture_output=True, text=True, errors="replace",
        )
        if res.returncode != 0 and "no samples" not in res.stderr:
            raise PerflabError(f"perf script could not read {perf_data}: {res.stderr.strip()[:200]}")
        return res.stdout

    def perf_annotate(self, perf_data: str, symbol: str) -> str:
        res = subprocess.run(
            [perf_path(self.perf), "annotate", "--stdio", "--no-source", "-i", perf_data, "-s", symbol],
            capture_output=True, text=True, errors="replace",
        )
        return res.stdout

    def perf_event(self, perf_data: str) -> str | None:
        """The event a perf.data file was recorded with (`perf evlist`), or None."""
        res = subprocess.run([perf_path(self.perf), "evlist", "-i", perf_data],
                             capture_output=True, text=True, errors="replace")
        names = [ln.strip() for ln in res.stdout.splitlines() if ln.strip() and not ln.startswith("#")]
        return names[0].split(":")[0] if res.returncode == 0 and names else None
