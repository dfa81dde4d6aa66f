"""The machine monitor: a thread sampling the machine at a fixed interval for a whole study.

Each tick reads the kernel's counters (platform/monitor.py), the node's meter (``ipmitool dcmi
power reading``) and every GPU (``nvidia-smi --query-gpu=...``) where they exist, and hands the
sample to a sink in batches (``FLUSH_EVERY`` samples, the phase's end, the stop): a perflab killed
mid-study keeps what the last batch held, at most ``FLUSH_EVERY`` intervals short. Ticks keep to
a fixed schedule (start + k * interval), so a slow ipmitool call skips ticks instead of
stretching the time axis. The phases (``idle-before``, ``study``, ``idle-after``) are set by the
caller; ``idle(seconds)`` samples a quiet machine for the idle baseline.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Sequence

from perflab.errors import PerflabError
from perflab.platform.energy import parse_ipmi_dcmi
from perflab.platform.monitor import GPU_QUERY, MachineReader, parse_nvidia_smi
from perflab.platform.sysfs import Root
from perflab.startup import which

FLUSH_EVERY = 10
IPMI_ARGV = ("ipmitool", "dcmi", "power", "reading")
PHASES = ("idle-before", "study", "idle-after")

Sink = Callable[[list[dict[str, Any]]], None]


def _run(argv: Sequence[str], timeout: float) -> str:
    """A tool's stdout, or PerflabError in one line (the tool failed or did not answer)."""
    import subprocess

    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PerflabError(f"{argv[0]} did not answer ({exc})") from None
    if proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines() or ["no output"])[0]
        raise PerflabError(f"{argv[0]} failed with status {proc.returncode}: {first}")
    return proc.stdout


class Monitor:
    """Samples the machine every ``interval_s`` from ``start`` to ``stop`` into ``sink``."""

    def __init__(self, interval_s: float = 1.0, idle_s: float = 0.0, root: Root = Root("/"),
                 gpu_argv: Sequence[str] | None = GPU_QUERY, ipmi_argv: Sequence[str] | None = IPMI_ARGV,
                 clock: Callable[[], int] = time.monotonic_ns) -> None:
        if not interval_s > 0:
            raise PerflabError(f"--monitor-interval {interval_s:g}: give a positive number of seconds (e.g. 1s)")
        if idle_s < 0:
            raise PerflabError(f"--idle {idle_s:g}: give zero or more seconds (e.g. 20s)")
        self.interval_s, self.idle_s, self.clock = float(interval_s), float(idle_s), clock
        self.reader = MachineReader(root)
        self.have, self.lacks = self.reader.sources()
        self.gpu_argv = self._probe("GPU", gpu_argv, parse_nvidia_smi, "nvidia-smi not found", root)
        self.ipmi_argv = self._probe("node meter", ipmi_argv, parse_ipmi_dcmi, "ipmitool not installed", root)
        self.phase = PHASES[0]
        self._rows: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sink: Sink | None = None
        self.samples = 0

    def _probe(self, what: str, argv: Sequence[str] | None, parse: Callable[[str], Any], missing: str,
               root: Root) -> Sequence[str] | None:
        """The tool's argv where one call answers and parses, else None with its reason in lacks."""
        if argv is None:
            return None
        if which(argv[0]) is None or not root.is_live:
            self.lacks.append(f"{what} ({missing if root.is_live else 'not this machine'})")
            return None
        try:
            got = parse(_run(argv, 10))
        except PerflabError as exc:
            self.lacks.append(f"{what} ({exc})")
            return None
        self.have.append(f"{what} power and utilisation ({len(got)} by nvidia-smi)" if isinstance(got, list)
                         else f"{what} power (ipmitool)")
        return argv

    def note(self) -> str:
        """One line: what is sampled, how often, and the sources this machine lacks."""
        line = f"monitor: every {self.interval_s:g} s: {', '.join(self.have)}"
        if self.idle_s:
            line += f"; idle {self.idle_s:g} s before and after"
        return line + (f"; not here: {'; '.join(self.lacks)}" if self.lacks else "")

    def sources_row(self) -> dict[str, Any]:
        return {"t_ns": self.clock(), "wall": time.time(), "phase": "sources",
                "sample": {"have": self.have, "lacks": self.lacks, "interval_s": self.interval_s,
                           "idle_s": self.idle_s}}

    def start(self, sink: Sink) -> None:
        self._sink = sink
        self._rows.append(self.sources_row())
        self.flush()
        self._prev, self._prev_ns = self.reader.snapshot(), self.clock()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="perflab-monitor", daemon=True)
        self._thread.start()

    def set_phase(self, phase: str) -> None:
        with self._lock:
            self.phase = phase
        self.flush()

    def idle(self, seconds: float | None = None, phase: str = "idle-before") -> None:
        """Sample a quiet machine for ``seconds`` (default ``idle_s``) in phase ``phase``."""
        seconds = self.idle_s if seconds is None else seconds
        if seconds > 0:
            self.set_phase(phase)
            self._stop.wait(seconds)

    def sample(self) -> dict[str, Any]:
        """One sample now: the interval since the previous one; processes asked in turn."""
        snap, ns = self.reader.snapshot(), self.clock()
        values = self.reader.derive(self._prev, snap, (ns - self._prev_ns) / 1e9)
        self._prev, self._prev_ns = snap, ns
        for key, argv, parse in (("gpus", self.gpu_argv, parse_nvidia_smi), ("ipmi_w", self.ipmi_argv, parse_ipmi_dcmi)):
            if argv is not None:
                try:
                    values[key] = parse(_run(argv, max(1.0, 2 * self.interval_s)))
                except PerflabError as exc:
                    values.setdefault("errors", []).append(str(exc))  # a flaky tool loses one sample
        with self._lock:
            row = {"t_ns": ns, "wall": time.time(), "phase": self.phase, "sample": values}
            self._rows.append(row)
            self.samples += 1
            full = len(self._rows) >= FLUSH_EVERY
        if full:
            self.flush()
        return row

    def _loop(self) -> None:
        start = time.monotonic()
        k = 1
        while not self._stop.wait(max(0.0, start + k * self.interval_s - time.monotonic())):
            self.sample()
            # the next tick on the schedule still ahead: a slow tick skips, never drifts
            k = max(k + 1, int((time.monotonic() - start) / self.interval_s) + 1)

    def _emit(self, rows: list[dict[str, Any]]) -> None:
        if rows and self._sink is not None:
            self._sink(rows)

    def flush(self, final: bool = False) -> None:
        """Hand the held samples to the sink. A sink that fails (a database server gone) keeps
        them for the next flush; only the last one, at stop, raises: the study goes on meanwhile."""
        with self._lock:
            rows, self._rows = self._rows, []
        try:
            self._emit(rows)
        except PerflabError:
            with self._lock:
                self._rows[:0] = rows
            if final:
                raise

    def stop(self) -> None:
        """End the sampling (one last sample closes the interval) and write what is held."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
            self.sample()
        self.flush(final=True)
