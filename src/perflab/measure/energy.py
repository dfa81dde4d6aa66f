"""Energy meters around a measurement: RAPL counters, perf's power events, the node's BMC.

Each meter has ``start()`` and ``stop() -> {domain: joules}``. ``choose_meter`` picks one for
``--energy auto|rapl|perf|ipmi|off`` and says in one line why none is available (a virtual
machine has none: perflab says so once and measures time as usual).
"""

from __future__ import annotations

# subprocess is imported in the functions that use it: `perflab run` starts without it
# (bench/startup.sh).
import signal
import threading
import time
from typing import TYPE_CHECKING, Protocol

from perflab.errors import PerflabError
from perflab.platform.energy import (
    parse_ipmi_dcmi, parse_perf_energy, rapl_available, rapl_delta_uj, rapl_domains, rapl_status, read_rapl,
)
from perflab.platform.hostcache import boot_cached
from perflab.platform.sysfs import Root
from perflab.startup import which

if TYPE_CHECKING:
    import subprocess

SOURCES = ("auto", "rapl", "perf", "ipmi", "off")
# The fastest a package drains a RAPL counter, for the re-read interval: a counter read less
# than once per wrap period can lose whole wraps. 500 W per package is above any server CPU.
_MAX_PACKAGE_W = 500.0


class EnergyMeter(Protocol):
    source: str

    def start(self) -> None: ...

    def stop(self) -> dict[str, float]: ...


class RaplMeter:
    """powercap RAPL counters, re-read at least every half wrap period on long runs."""

    source = "rapl"

    def __init__(self, root: Root = Root("/")) -> None:
        self.root = root
        self.domains = rapl_domains(root)
        shortest_wrap_s = min(d.max_range_uj for d in self.domains) / 1e6 / _MAX_PACKAGE_W
        self.interval_s = max(1.0, shortest_wrap_s / 2)
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._last: dict[str, int] = {}  # set by start()
        self._acc: dict[str, int] = {}

    def _sample(self) -> None:
        with self._lock:
            now = read_rapl(self.root, self.domains)
            for d in self.domains:
                self._acc[d.key] += rapl_delta_uj(self._last[d.key], now[d.key], d.max_range_uj)
            self._last = now

    def _tick(self) -> None:
        self._sample()
        self._arm()

    def _arm(self) -> None:
        self._timer = threading.Timer(self.interval_s, self._tick)
        self._timer.daemon = True
        self._timer.start()

    def start(self) -> None:
        self._last = read_rapl(self.root, self.domains)
        self._acc = {d.key: 0 for d in self.domains}
        self._arm()

    def stop(self) -> dict[str, float]:
        if self._timer is not None:
            self._timer.cancel()
        self._sample()
        return {f"rapl:{k}": uj / 1e6 for k, uj in self._acc.items()}


class IpmiMeter:
    """The node's own meter through its BMC, sampled about once a second (whole-node watts)."""

    source = "ipmi"

    def __init__(self, argv: tuple[str, ...] = ("ipmitool", "dcmi", "power", "reading"), period_s: float = 1.0) -> None:
        self.argv, self.period_s = argv, period_s
        self._samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def read_watts(self) -> float:
        import subprocess
        try:
            proc = subprocess.run(self.argv, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise PerflabError(f"{self.argv[0]} did not answer ({exc}); check the BMC or choose another --energy") from None
        if proc.returncode != 0:
            first = (proc.stderr.strip().splitlines() or ["no output"])[0]
            hint = " (it asks for a password: configure in-band access)" if "password" in proc.stderr.lower() else ""
            raise PerflabError(f"{' '.join(self.argv)} failed with status {proc.returncode}: {first}{hint}")
        return parse_ipmi_dcmi(proc.stdout)

    def _loop(self) -> None:
        while not self._stop.wait(self.period_s):
            try:
                self._samples.append((time.monotonic(), self.read_watts()))
            except PerflabError:
                return  # the end reading decides; a flaky BMC mid-run only loses resolution

    def start(self) -> None:
        self._stop.clear()
        self._samples = [(time.monotonic(), self.read_watts())]
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def stop(self) -> dict[str, float]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._samples.append((time.monotonic(), self.read_watts()))
        return {"ipmi:node": trapezoid_joules(self._samples)}


def trapezoid_joules(samples: list[tuple[float, float]]) -> float:
    """Joules from (time s, watts) samples by the trapezoid rule."""
    pts = sorted(samples)
    return sum((t1 - t0) * (w0 + w1) / 2 for (t0, w0), (t1, w1) in zip(pts, pts[1:]))


class PerfEnergyMeter:
    """perf's power/energy-pkg/ and energy-ram/ events, system-wide, for the run's duration."""

    source = "perf"

    def __init__(self, events: tuple[str, ...] = ("power/energy-pkg/", "power/energy-ram/")) -> None:
        self.events = events
        self._proc: subprocess.Popen | None = None

    def start(self) -> None:
        import subprocess
        self._proc = subprocess.Popen(
            ["perf", "stat", "-a", "-x,", "-e", ",".join(self.events)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def stop(self) -> dict[str, float]:
        assert self._proc is not None
        self._proc.send_signal(signal.SIGINT)
        _, err = self._proc.communicate(timeout=30)
        found = parse_perf_energy(err)
        if not found:
            raise PerflabError(f"perf counted no energy events ({(err.strip().splitlines() or ['no output'])[-1]})")
        return {f"perf:{k}": j for k, j in found.items()}


def _perf_power_events(root: Root) -> list[str]:
    names = root.listdir("sys/bus/event_source/devices/power/events", r"energy-(pkg|ram|cores|psys)")
    return [f"power/{n}/" for n in names]


def _perf_probe(events: tuple[str, ...]) -> bool:
    """Whether perf's energy events count anything over a short system-wide sleep."""
    import subprocess
    try:
        proc = subprocess.run(["perf", "stat", "-a", "-x,", "-e", ",".join(events), "sleep", "0.05"],
                              capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return any(j > 0 for j in parse_perf_energy(proc.stderr).values())


def choose_meter(request: str = "auto", root: Root = Root("/")) -> tuple[EnergyMeter | None, str]:
    """(meter or None, one line saying which source is used or why none is)."""
    if request not in SOURCES:
        raise PerflabError(f"--energy {request!r} is unknown: choose one of {', '.join(SOURCES)}")
    if request == "off":
        return None, "energy: not measured (--energy off)"
    if request in ("auto", "rapl"):
        ok, reason = rapl_available(root)
        if ok:
            return RaplMeter(root), f"energy: {reason} (CPU packages and DRAM only, not the whole node)"
        if request == "rapl":
            raise PerflabError(f"--energy rapl: {reason}")
        rapl_reason = reason
    if request in ("auto", "perf"):
        events = _perf_power_events(root) if which("perf") else []
        why = "perf has no power/energy-* events here (no RAPL PMU)"
        if events and root.is_live:
            # Whether the events count changes only with a reboot or another perf; probing costs
            # 60-70 ms, a fifth of a short `perflab run` on a VM, so it is asked once per boot.
            counted = boot_cached(f"perf-energy {','.join(events)}", lambda: _perf_probe(tuple(events)), root)
            if counted:
                return PerfEnergyMeter(tuple(events)), f"energy: perf {', '.join(events)} (CPU and DRAM, not the whole node)"
            why = f"perf's {', '.join(events)} count nothing here (a virtual machine passes the events through empty)"
        if request == "perf":
            raise PerflabError(f"--energy perf: {why}")
        rapl_reason = f"{rapl_reason}; {why}"
    if request == "ipmi":
        if which("ipmitool") is None:
            raise PerflabError("--energy ipmi: ipmitool not found; install it (apt-get install ipmitool)")
        meter = IpmiMeter()
        meter.read_watts()  # fails here, in one line, before anything is measured
        return meter, "energy: the node's BMC meter (ipmitool dcmi power reading), whole node"
    return None, f"energy: not measured: {rapl_reason}"


def describe_sources(root: Root = Root("/"), probe_ipmi: bool | None = None) -> dict:
    """What `perflab machine` shows: the meter ``--energy auto`` picks (choose_meter's own decision
    and line) and, per source, what it reads or why it cannot."""
    meter, note = choose_meter("auto", root)
    perf = which("perf")
    events = _perf_power_events(root)
    out: dict = {
        "auto": {"source": meter.source if meter is not None else None, "note": note},
        "rapl": rapl_status(root),
        "perf": {"events": events, "reason": None if events else
                 "no power/energy-* events in /sys/bus/event_source/devices/power (no RAPL PMU)"},
    }
    if perf is None:
        out["perf"]["reason"] = "perf not installed (apt-get install linux-perf)"
    tool = which("ipmitool")
    ipmi: dict = {"ipmitool": tool, "watts": None,
                  "reason": "ipmitool not installed (apt-get install ipmitool)" if tool is None else None}
    if tool is not None and (probe_ipmi if probe_ipmi is not None else root.is_live):
        try:
            ipmi["watts"] = IpmiMeter().read_watts()
        except PerflabError as exc:
            ipmi["reason"] = str(exc)
    elif tool is not None:
        ipmi["reason"] = "not read (not this machine)"
    out["ipmi"] = ipmi
    return out
