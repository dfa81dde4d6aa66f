"""A deterministic window recorder for tests: scripted windows and samples, no perf, no process.

``model(spec, request)`` returns a MockWindow: how many ms the window lasts, the samples
(symbol, dso, period, offset) perf would have taken in it, and the exit code. The recorder keeps
the `perf script` text of every recording it made in memory (nothing is written to disk) and
answers ``perf_script`` from it, so the profile study runs end to end on virtual time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from perflab.measure.executor import MockExecutor
from perflab.measure.window import WindowRecording, WindowRequest
from perflab.model import RunSpec

# A recorded sample: (symbol, shared object, period, byte offset in the function).
MockSample = tuple[str, str, int, int]


@dataclass
class MockWindow:
    samples: list[MockSample] = field(default_factory=list)
    window_ms: float = 20.0
    exit_code: int = 0
    opened: bool = True
    latency_us: float = 150.0  # marker read -> acknowledged enable
    marker_seen: bool = False  # not opened: the start marker was read, the run ended before perf's ack


class MockWindowRecorder(MockExecutor):
    """MockExecutor that also plays perf record windows (the WindowRecorder interface)."""

    def __init__(self, model: Callable[[RunSpec, WindowRequest], MockWindow]) -> None:
        super().__init__()
        self.window_model = model
        self.recorded: list[tuple[RunSpec, WindowRequest]] = []
        self._scripts: dict[str, str] = {}
        self._chains: dict[str, str] = {}
        self._events: dict[str, str] = {}

    def record_window(self, spec: RunSpec, request: WindowRequest) -> WindowRecording:
        self.recorded.append((spec, request))
        w = self.window_model(spec, request)
        launch = self.clock_ns
        marker = launch + 5_000_000
        rec = WindowRecording(perf_data=request.perf_data, exit_code=w.exit_code, launch_ns=launch,
                              end_ns=marker + int(w.window_ms * 1e6) + 5_000_000,
                              attached=tuple(request.attach))
        if w.opened:
            win = request.window
            rec.start_marker_ns = marker if win.start else None
            rec.start_line = "start (mock)" if win.start else ""
            rec.enable_sent_ns = marker + 1000
            rec.enabled_ns = marker + int(w.latency_us * 1e3)
            rec.disabled_ns = rec.enabled_ns + int(w.window_ms * 1e6)
            if win.stop:
                rec.stop_marker_ns = rec.disabled_ns - int(w.latency_us * 1e3)
                rec.stop_line, rec.closed_by = "done (mock)", "stop marker"
            else:
                rec.closed_by = "end of run"
            step = max(1, int(w.window_ms * 1e6) // max(1, len(w.samples)))
            lines, chains = [], []
            for i, (sym, dso, period, off) in enumerate(w.samples):
                t = rec.enabled_ns + i * step
                name = sym if sym == "[unknown]" else f"{sym}+0x{off:x}"  # as perf script prints
                lines.append(f" 100/100 {t // 10**9}.{t % 10**9:09d}: {period} {0x400000 + off:x} "
                             f"{name} ({dso})")
                # with call chains: the sampled function under main, as perf script prints them
                chains.append(f" 100/100 {t // 10**9}.{t % 10**9:09d}: {period}\n\t{0x400000 + off:x} {name} "
                              f"({dso})\n\t401000 main+0x10 ({dso})\n")
            self._scripts[request.perf_data] = "\n".join(lines) + "\n"
            self._chains[request.perf_data] = "\n".join(chains)
        else:
            if w.marker_seen:
                rec.start_marker_ns, rec.start_line = marker, "start (mock)"
                rec.enable_sent_ns = marker + 1000
                rec.closed_by = "run ended before perf acknowledged enable"
            self._scripts[request.perf_data] = self._chains[request.perf_data] = ""
        self._events[request.perf_data] = request.event
        self.clock_ns = rec.end_ns
        return rec

    def perf_script(self, perf_data: str, fields_: str, chains: bool = False) -> str:
        return (self._chains if chains else self._scripts).get(perf_data, "")

    def perf_annotate(self, perf_data: str, symbol: str) -> str:
        return ""  # no disassembly: the study falls back to sample offsets

    def perf_event(self, perf_data: str) -> str | None:
        return self._events.get(perf_data)
