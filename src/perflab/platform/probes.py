"""Optional machine features, each probed once per process: ``Probe(available, reason)``.

Studies ask a probe before they rely on a feature and print its one-line reason when it is
missing (the pyperf ``_system.py`` habit). Each probe runs the real thing (``perf stat``)
rather than guessing from config files. Probes that build a program (can this machine build and
run -m32 or -mx32 binaries?) live with the builds, in perflab.kernels.abi.
"""

from __future__ import annotations

# subprocess is imported in the functions that use it: `perflab run` starts without it
# (bench/startup.sh).
import functools
from dataclasses import dataclass

from perflab.platform.sysfs import Root
from perflab.platform.topology import read_topology
from perflab.startup import which

NO_HW_COUNTERS = "no hardware performance counters (virtual machine?): using cpu-clock"



@dataclass(frozen=True)
class Probe:
    available: bool
    reason: str  # one line: what works, or what is missing and how to get it
    value: object = None  # the probed quantity where there is one (node count, version)

    def __bool__(self) -> bool:
        return self.available


def _run(argv: list[str], timeout: float = 30) -> subprocess.CompletedProcess:
    import subprocess
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


@functools.lru_cache(maxsize=None)
def perf_status() -> Probe:
    """perf present and allowed to count: ``perf stat -e task-clock true`` succeeds."""
    import subprocess
    exe = which("perf")
    if exe is None:
        return Probe(False, "perf not found: install linux-perf (apt-get install linux-perf)")
    try:
        proc = _run([exe, "stat", "-e", "task-clock", "true"])
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Probe(False, f"perf does not run: {exc}")
    if proc.returncode != 0:
        paranoid = Root("/").read_int("proc/sys/kernel/perf_event_paranoid")
        return Probe(
            False,
            f"perf stat failed ({_first_line(proc.stderr)}); perf_event_paranoid={paranoid}: "
            "lower it (sysctl kernel.perf_event_paranoid=1) or run as root",
        )
    version = _first_line(_run([exe, "--version"]).stdout)
    return Probe(True, f"{version or 'perf'}: software counters work", version)


@functools.lru_cache(maxsize=None)
def hw_counters() -> Probe:
    """Hardware counters: ``perf stat -x, -e cycles,instructions true`` counts both."""
    perf = perf_status()
    if not perf.available:
        return Probe(False, perf.reason)
    proc = _run(["perf", "stat", "-x,", "-e", "cycles,instructions", "true"])
    text = proc.stderr
    if proc.returncode != 0 or "<not supported>" in text or "<not counted>" in text:
        return Probe(False, NO_HW_COUNTERS)
    return Probe(True, "hardware counters work (cycles, instructions)")


@functools.lru_cache(maxsize=None)
def clang_available() -> Probe:
    exe = which("clang")
    if exe is None:
        return Probe(False, "clang not found: install clang (apt-get install clang)")
    version = _first_line(_run([exe, "--version"]).stdout)
    return Probe(True, version or "clang", version)


@functools.lru_cache(maxsize=None)
def valgrind_available() -> Probe:
    """Valgrind, for --instrument cachegrind (simulated, deterministic counts without a PMU)."""
    import subprocess
    exe = which("valgrind")
    if exe is None:
        return Probe(False, "valgrind not installed: install it for --instrument cachegrind "
                            "(apt-get install valgrind)")
    try:
        version = _first_line(_run([exe, "--version"]).stdout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Probe(False, f"valgrind does not run: {exc}")
    return Probe(True, f"{version or 'valgrind'}: --instrument cachegrind works", version)


@functools.lru_cache(maxsize=None)
def numa_nodes() -> Probe:
    """Number of online NUMA nodes (available when there are at least two to compare)."""
    n = len(read_topology(Root("/")).nodes)
    if n < 2:
        return Probe(False, f"{n} NUMA node: memory-placement comparisons need at least two", n)
    return Probe(True, f"{n} NUMA nodes", n)


PROBES = {
    "perf": perf_status,
    "hw_counters": hw_counters,
    "clang": clang_available,
    "valgrind": valgrind_available,
    "numa": numa_nodes,
}


def all_probes() -> dict[str, Probe]:
    """Every probe by name (each runs once per process)."""
    return {name: fn() for name, fn in PROBES.items()}


def clear_cache() -> None:
    """Forget every probe's answer (tests; after installing a package)."""
    for fn in PROBES.values():
        fn.cache_clear()
