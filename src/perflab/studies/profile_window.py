"""Record a window of a run with `perf record --control` driven by the workload's own output.

perf is started first, with its events disabled (``-D -1``) and the workload as its child (so a
forking workload's children are followed: perf's counters are inherited). perflab reads the
workload's output live, through a pty (C stdio then line-buffers, as on a terminal) or a log file
watched with inotify, and writes ``enable`` / ``disable`` to perf's control fifo when the start /
stop marker lines appear, waiting for perf's ``ack`` each time. Timestamps are CLOCK_MONOTONIC on
both sides (``perf record -k CLOCK_MONOTONIC``), so samples can be checked against the window.
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from perflab.errors import PerflabError

ACK_TIMEOUT_S = 5.0


def event_markers(n: int) -> tuple[str, str]:
    """Start/stop regexes of event N for minihlt and Athena-style logs (#7 must not match #73)."""
    return (rf"start processing event #{n}(?!\d)", rf"done processing event #{n}(?!\d)")


def compile_marker(regex: str | None, option: str) -> re.Pattern[str] | None:
    """Compile a marker regex or raise a one-line PerflabError naming the option."""
    if regex is None:
        return None
    try:
        return re.compile(regex)
    except re.error as exc:
        raise PerflabError(
            f"{option} {regex!r} is not a valid regular expression ({exc}); "
            "fix it or escape special characters, e.g. 'event \\#7'"
        ) from None


@dataclass(frozen=True)
class Window:
    """When to record: between marker lines, or a time window (seconds)."""

    start: str | None = None  # regex on an output line; None -> from `after` seconds after launch
    stop: str | None = None  # regex; None -> `duration` after the enable, or the end of the run
    after: float | None = None  # seconds after launch (time window) when start is None
    duration: float | None = None  # seconds the window stays open

    def describe(self) -> str:
        if self.start is not None:
            end = f"/{self.stop}/" if self.stop else (
                f"{self.duration:g} s later" if self.duration else "end of run")
            return f"/{self.start}/ .. {end}"
        if self.after is None and self.duration is None:
            return "whole run"
        end = f"+{self.duration:g} s" if self.duration else "end of run"
        return f"{self.after or 0:g} s after launch .. {end}"


@dataclass
class WindowRecording:
    """What happened while recording: the marker and acknowledgement times (monotonic ns)."""

    perf_data: str
    exit_code: int | None  # the workload's (perf record passes it through)
    launch_ns: int
    end_ns: int
    start_marker_ns: int | None = None  # when perflab read the start marker line
    enable_sent_ns: int | None = None  # when `enable` was written (no sample can precede it)
    enabled_ns: int | None = None  # when perf acknowledged `enable`
    stop_marker_ns: int | None = None
    disabled_ns: int | None = None  # acknowledged `disable` (or the end of the run)
    start_line: str = ""
    stop_line: str = ""
    closed_by: str = ""  # "stop marker", "duration", "end of run"
    output_tail: list[str] = field(default_factory=list)
    perf_messages: list[str] = field(default_factory=list)

    @property
    def opened(self) -> bool:
        return self.enabled_ns is not None

    @property
    def enable_latency_ns(self) -> int | None:
        """From reading the start marker line to perf's acknowledged enable."""
        if self.start_marker_ns is None or self.enabled_ns is None:
            return None
        return self.enabled_ns - self.start_marker_ns

    @property
    def sample_bounds(self) -> tuple[int, int] | None:
        """Every sample must lie in [enable written, disable acknowledged] (perf clock = monotonic)."""
        if self.enable_sent_ns is None or self.disabled_ns is None:
            return None
        return self.enable_sent_ns, self.disabled_ns

    @property
    def disable_latency_ns(self) -> int | None:
        if self.stop_marker_ns is None or self.disabled_ns is None:
            return None
        return self.disabled_ns - self.stop_marker_ns


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
    """Minimal ctypes inotify on a log file's directory (IN_MODIFY | IN_CREATE); None if absent."""

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


def perf_record_argv(
    perf: str, perf_data: str, ctl: str, ack: str, workload_argv: Sequence[str], *,
    event: str, freq: int, call_graph: str | None, clockid: str = "CLOCK_MONOTONIC",
) -> list[str]:
    """`perf record` started with events disabled, controlled through two fifos."""
    argv = [perf, "record", "-o", perf_data, "-e", event, "-F", str(freq),
            "-k", clockid, "--control", f"fifo:{ctl},{ack}", "-D", "-1"]
    if call_graph:
        argv += ["--call-graph", call_graph]
    return argv + ["--", *workload_argv]


def record_window(
    workload_argv: Sequence[str],
    perf_data: str,
    window: Window,
    *,
    event: str = "cpu-clock",
    freq: int = 4000,
    call_graph: str | None = None,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    log_file: str | None = None,
    use_pty: bool = True,
    timeout: float | None = None,
    output_log: str | None = None,
    on_line: Callable[[str], None] | None = None,
    perf: str = "perf",
    realtime: bool = True,
) -> WindowRecording:
    """Run the workload under `perf record -D -1` and enable perf only inside the window."""
    start_re = compile_marker(window.start, "--start")
    stop_re = compile_marker(window.stop, "--stop")
    perf_path = shutil.which(perf)
    if perf_path is None:
        raise PerflabError("perf is not installed: install linux-perf (Debian) or linux-tools (Ubuntu)")

    tmp = tempfile.mkdtemp(prefix="perflab-ctl-")
    ctl, ack = os.path.join(tmp, "ctl"), os.path.join(tmp, "ack")
    os.mkfifo(ctl)
    os.mkfifo(ack)
    # O_RDWR on a fifo never blocks on Linux: perflab cannot hang if perf dies before opening it.
    ctl_fd = os.open(ctl, os.O_RDWR)
    ack_fd = os.open(ack, os.O_RDWR | os.O_NONBLOCK)

    full_env = dict(os.environ)
    # Python workloads: unbuffered stdio, so marker lines arrive when printed.
    full_env["PYTHONUNBUFFERED"] = "1"
    full_env.update(env or {})
    workload = list(workload_argv)
    if not use_pty and shutil.which("stdbuf"):
        # On a pipe, C stdio would block-buffer: ask for line buffering.
        workload = ["stdbuf", "-oL", "-eL", *workload]
    argv = perf_record_argv(perf_path, perf_data, ctl, ack, workload, event=event, freq=freq,
                            call_graph=call_graph)
    rt = realtime and _can_realtime()
    if rt:
        # On a busy machine the enable/ack round trip waits for a CPU twice (perf, then perflab):
        # run perf (and perflab's reader, below) SCHED_FIFO; -R keeps the workload SCHED_OTHER.
        argv = ["chrt", "-f", "-R", str(RT_PRIORITY), *argv]
    if use_pty:
        import pty
        import tty

        master, slave = pty.openpty()
        tty.setraw(slave)  # no \n -> \r\n, no echo
    else:
        master, slave = os.pipe()

    inotify: _Inotify | None = None
    log_fh = None
    log_src = _LineSource()
    if log_file:
        Path(log_file).parent.mkdir(parents=True, exist_ok=True)
        try:
            inotify = _Inotify(str(Path(log_file).parent.resolve()))
        except (OSError, AttributeError):
            inotify = None  # polling fallback below

    out_fh = open(output_log, "w") if output_log else None
    launch = time.monotonic_ns()
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=full_env, cwd=cwd,
        start_new_session=True,
    )
    os.close(slave)
    saved_policy = _enter_realtime() if rt else None
    rec = WindowRecording(perf_data=perf_data, exit_code=None, launch_ns=launch, end_ns=0)
    state = {"open": False, "closed": False}
    deadline = launch + int(timeout * 1e9) if timeout else None

    def command(cmd: bytes) -> int | None:
        """Send a control command; the ack time, or None when perf has already exited."""
        if cmd == b"enable":
            rec.enable_sent_ns = time.monotonic_ns()
        os.write(ctl_fd, cmd + b"\n")
        end = time.monotonic() + ACK_TIMEOUT_S
        got = b""
        while b"\n" not in got:
            left = end - time.monotonic()
            if proc.poll() is not None:
                return None  # the run (and perf) ended first: a marker printed at the very end
            if left <= 0:
                raise PerflabError(
                    f"perf record did not acknowledge '{cmd.decode()}' within {ACK_TIMEOUT_S:g} s; "
                    "check that perf supports --control (perf >= 5.10)")
            r, _, _ = select.select([ack_fd], [], [], left)
            if r:
                try:
                    got += os.read(ack_fd, 64)
                except BlockingIOError:
                    pass
        return time.monotonic_ns()

    def open_window(line: str | None, t_read: int) -> None:
        rec.start_marker_ns = t_read
        rec.start_line = line or ""
        rec.enabled_ns = command(b"enable")
        if rec.enabled_ns is None:
            state["closed"] = True
            rec.closed_by = "run ended before perf acknowledged enable"
            return
        state["open"] = True

    def close_window(how: str, line: str | None, t_read: int) -> None:
        rec.stop_marker_ns = t_read if how == "stop marker" else None
        rec.stop_line = line or ""
        rec.disabled_ns = command(b"disable") or time.monotonic_ns()
        rec.closed_by = how
        state["open"], state["closed"] = False, True

    def handle(lines: list[str], t_read: int, from_log: bool) -> None:
        for line in lines:
            if not from_log:
                if line.startswith("[ perf record:") or line in ("Events disabled", "Events enabled"):
                    rec.perf_messages.append(line)
                    continue
                if out_fh:
                    out_fh.write(line + "\n")
                rec.output_tail.append(line)
                if len(rec.output_tail) > 40:
                    del rec.output_tail[:-40]
                if on_line:
                    on_line(line)
            if log_file and not from_log:
                continue  # markers come from the log file
            if state["closed"]:
                continue
            if not state["open"] and start_re is not None and start_re.search(line):
                open_window(line, t_read)
            elif state["open"] and stop_re is not None and stop_re.search(line):
                close_window("stop marker", line, t_read)

    def timed_events(now: int) -> None:
        if state["closed"]:
            return
        if not state["open"] and start_re is None:
            at = launch + int((window.after or 0.0) * 1e9)
            if now >= at:
                open_window(None, now)
        elif state["open"] and stop_re is None and window.duration is not None:
            assert rec.enabled_ns is not None
            if now >= rec.enabled_ns + int(window.duration * 1e9):
                close_window("duration", None, now)

    src = _LineSource()
    try:
        eof = False
        while not eof:
            now = time.monotonic_ns()
            timed_events(now)
            if deadline and now > deadline:
                os.killpg(proc.pid, signal.SIGTERM)
                deadline = None
            fds = [master] + ([inotify.fd] if inotify else [])
            wait = 0.05
            if not state["open"] and start_re is None and not state["closed"]:
                wait = max(0.0, min(wait, (launch + (window.after or 0) * 1e9 - now) / 1e9))
            elif state["open"] and stop_re is None and window.duration is not None:
                assert rec.enabled_ns is not None
                wait = max(0.0, min(wait, (rec.enabled_ns + window.duration * 1e9 - now) / 1e9))
            if log_file and not inotify:
                wait = min(wait, 0.001)  # polling fallback: 1 ms
            r, _, _ = select.select(fds, [], [], wait)
            t_read = time.monotonic_ns()
            if master in r:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: every holder of the pty slave has exited
                    data = b""
                if not data:
                    eof = True
                    handle(src.flush(), t_read, False)
                else:
                    handle(src.feed(data), t_read, False)
            if log_file:
                if inotify and inotify.fd in r:
                    inotify.drain()
                if log_fh is None and os.path.exists(log_file):
                    log_fh = open(log_file, "rb")
                if log_fh is not None:
                    chunk = log_fh.read()
                    if chunk:
                        handle(log_src.feed(chunk), t_read, True)
        if log_fh is not None:
            handle(log_src.feed(log_fh.read()) + log_src.flush(), time.monotonic_ns(), True)
        if state["open"] and proc.poll() is None:
            try:
                close_window("end of run", None, time.monotonic_ns())
            except PerflabError:
                pass
        rc = proc.wait()
        rec.end_ns = time.monotonic_ns()
        if state["open"]:
            rec.disabled_ns, rec.closed_by = rec.end_ns, "end of run"
        rec.exit_code = rc
    except BaseException:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
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
        if inotify:
            inotify.close()
        if log_fh:
            log_fh.close()
        if out_fh:
            out_fh.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return rec


RT_PRIORITY = 10


def _can_realtime() -> bool:
    """SCHED_FIFO needs root or CAP_SYS_NICE (and chrt); without it the window still works."""
    if shutil.which("chrt") is None or not hasattr(os, "SCHED_FIFO"):
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


def perf_failure_hint(messages: Sequence[str]) -> str | None:
    """A one-line fix for perf's permission/availability errors, or None."""
    text = "\n".join(messages)
    if "perf_event_paranoid" in text or "Permission denied" in text or "Access to performance monitoring" in text:
        return ("perf is not permitted to record: run 'sysctl kernel.perf_event_paranoid=1' "
                "(or run as root / grant CAP_PERFMON)")
    if "not supported" in text and "event" in text:
        return "perf cannot open the event on this machine: try --event cpu-clock"
    return None

