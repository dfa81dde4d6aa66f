"""perf record windows: the request, what happened, and the recorder that starts perf.

A window recorder is the executor-style interface of profiling: ``record_window(spec, request)``
records one window of a run (or of a running process) and returns a WindowRecording;
``perf_script``, ``perf_annotate`` and ``perf_event`` read a recording back. PerfWindowRecorder
(window_perf) does it with the real perf; MockWindowRecorder (window_mock) plays it in tests, so
the profile study's logic runs without perf.

Two ways to record a window:
- launch: ``perf record -D -1 ... -- CMD``: perf starts first with its events disabled and the
  workload as its child (its children are followed: counters are inherited), and is enabled
  through its control fifo when the start marker appears in the output or a log file;
- attach: ``perf record -p PID[,PID...] -D -1``: a job that is already running, its markers read
  from its log file (seed 001's case), with the same fifo window and latency figures.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable

from perflab.errors import PerflabError
from perflab.model import RunSpec, known_fields
from perflab.startup import which

ACK_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Window:
    """When to record: between marker lines, or a time window (seconds)."""

    start: str | None = None  # regex on an output line; None -> from `after` seconds after launch
    stop: str | None = None  # regex; None -> `duration` after the enable, or the end of the run
    after: float | None = None  # seconds after launch (time window) when start is None
    duration: float | None = None  # seconds the window stays open

    @property
    def whole_run(self) -> bool:
        """No marker and no time bound: the window is the whole run."""
        return self.start is None and self.after is None and self.duration is None

    def describe(self) -> str:
        if self.start is not None:
            end = f"/{self.stop}/" if self.stop else (
                f"{self.duration:g} s later" if self.duration else "end of run")
            return f"/{self.start}/ .. {end}"
        if self.whole_run:
            return "whole run"
        end = f"+{self.duration:g} s" if self.duration else "end of run"
        return f"{self.after or 0:g} s after launch .. {end}"


@dataclass(frozen=True)
class WindowRequest:
    """How to record one window: perf's options, where the markers come from, what to attach to."""

    perf_data: str
    window: Window = Window()
    event: str = "cpu-clock"
    freq: int = 4000
    call_graph: str | None = None
    log_file: str | None = None  # markers from this file (inotify) instead of the output
    use_pty: bool = True  # launch: read the output through a pty (line-buffered C stdio)
    output_log: str | None = None  # launch: keep the workload's output here
    timeout: float | None = None  # launch: kill the workload; attach: stop recording
    attach: tuple[int, ...] = ()  # attach to these running processes instead of launching
    inherit: bool = True  # attach: follow processes and threads they start after the attach


@dataclass
class WindowRecording:
    """What happened while recording: the marker and acknowledgement times (monotonic ns)."""

    perf_data: str
    exit_code: int | None  # launch: the workload's (perf passes it through); attach: perf's
    launch_ns: int
    end_ns: int
    start_marker_ns: int | None = None  # when perflab read the start marker line
    enable_sent_ns: int | None = None  # when `enable` was written (no sample can precede it)
    enabled_ns: int | None = None  # when perf acknowledged `enable`
    stop_marker_ns: int | None = None
    disabled_ns: int | None = None  # acknowledged `disable` (or the end of the run)
    start_line: str = ""
    stop_line: str = ""
    closed_by: str = ""  # "stop marker", "duration", "end of run", "timeout"
    output_tail: list[str] = field(default_factory=list)
    perf_messages: list[str] = field(default_factory=list)
    attached: tuple[int, ...] = ()  # the processes perf was attached to (attach mode)
    timed_out: bool = False  # the request's timeout ended it (a launched workload was killed)

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
    def disable_latency_ns(self) -> int | None:
        if self.stop_marker_ns is None or self.disabled_ns is None:
            return None
        return self.disabled_ns - self.stop_marker_ns

    @property
    def sample_bounds(self) -> tuple[int, int] | None:
        """Every sample must lie in [enable written, disable acknowledged] (perf clock = monotonic)."""
        if self.enable_sent_ns is None or self.disabled_ns is None:
            return None
        return self.enable_sent_ns, self.disabled_ns

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["attached"] = list(self.attached)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "WindowRecording":
        kw = known_fields(cls, d)
        kw["attached"] = tuple(kw.get("attached") or ())
        return cls(**kw)


@runtime_checkable  # a profile asks its executor whether it records windows itself (the mock does)
class WindowRecorder(Protocol):
    """The executor-style interface of a profile: record a window, read a recording back."""

    def record_window(self, spec: RunSpec, request: WindowRequest) -> WindowRecording: ...

    def perf_script(self, perf_data: str, fields_: str, chains: bool = False) -> str: ...

    def perf_annotate(self, perf_data: str, symbol: str) -> str: ...

    def perf_event(self, perf_data: str) -> str | None: ...


def perf_record_argv(perf: str, request: WindowRequest, ctl: str, ack: str,
                     workload_argv: Sequence[str] = (), clockid: str = "CLOCK_MONOTONIC") -> list[str]:
    """`perf record` started with events disabled, controlled through two fifos."""
    argv = [perf, "record", "-o", request.perf_data, "-e", request.event, "-F", str(request.freq),
            "-k", clockid, "--control", f"fifo:{ctl},{ack}"]
    if not request.window.whole_run:
        # Events disabled until perflab enables them. A whole run records from the exec (or the
        # attach) on: enabling through the fifo would lose perf's own start-up (~150 ms here).
        argv += ["-D", "-1"]
    if request.call_graph:
        argv += ["--call-graph", request.call_graph]
    if request.attach:
        argv += ["-p", ",".join(map(str, request.attach))]
        if not request.inherit:
            argv.append("--no-inherit")
        return argv
    return argv + ["--", *workload_argv]


def perf_failure_hint(messages: Sequence[str]) -> str | None:
    """A one-line fix for perf's permission/availability errors, or None."""
    text = "\n".join(messages)
    if "perf_event_paranoid" in text or "Permission denied" in text or "Access to performance monitoring" in text:
        return ("perf is not permitted to record: run 'sysctl kernel.perf_event_paranoid=1' "
                "(or run as root / grant CAP_PERFMON)")
    if "not supported" in text and "event" in text:
        return "perf cannot open the event on this machine: try --perf-event cpu-clock"
    if "No such process" in text:
        return "the process to attach to exited before perf could attach"
    return None


def perf_path(perf: str = "perf") -> str:
    path = which(perf)
    if path is None:
        raise PerflabError("perf is not installed: install linux-perf (Debian) or linux-tools-$(uname -r) (Ubuntu)")
    return path
