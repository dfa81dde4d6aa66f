"""Optional machine features, each probed once per process: ``Probe(available, reason)``.

Studies ask a probe before they rely on a feature and print its one-line reason when it is
missing (the pyperf ``_system.py`` habit). Each probe runs the real thing (``perf stat``, a
compiled -mx32 binary) rather than guessing from config files.
"""

from __future__ import annotations

import errno
import functools
import os
import platform
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from perflab.platform.sysfs import Root

NO_HW_COUNTERS = "no hardware performance counters (virtual machine?): using cpu-clock"
NO_X32_KERNEL = "this kernel cannot run x32 binaries (CONFIG_X86_X32_ABI not set)"
NO_X32_LIBC = "cannot build -mx32: install libc6-dev-x32"
NO_M32_LIBC = "cannot build -m32: install gcc-multilib (libc6-dev-i386)"

_PROBE_SOURCE = (
    "#include <stdio.h>\n"
    "int main(void) { printf(\"ok %d\\n\", (int)(sizeof(void *) * 8)); return 0; }\n"
)


@dataclass(frozen=True)
class Probe:
    available: bool
    reason: str  # one line: what works, or what is missing and how to get it
    value: object = None  # the probed quantity where there is one (node count, version)

    def __bool__(self) -> bool:
        return self.available


def _run(argv: list[str], timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


@functools.lru_cache(maxsize=None)
def perf_status() -> Probe:
    """perf present and allowed to count: ``perf stat -e task-clock true`` succeeds."""
    exe = shutil.which("perf")
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


def _probe_source() -> Path:
    from perflab.kernels.build import cache_root

    src = cache_root() / "probes" / "abi_probe.c"
    if not src.exists() or src.read_text() != _PROBE_SOURCE:
        src.parent.mkdir(parents=True, exist_ok=True)
        tmp = src.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_PROBE_SOURCE)
        os.replace(tmp, src)
    return src


def _build_and_exec(flag: str, no_libc: str, no_kernel: str, compiler: str = "gcc") -> tuple[bool, bool, str]:
    """(built, ran, reason) for the probe program compiled with ``flag``."""
    from perflab.kernels.build import BuildError, build

    if platform.machine() not in ("x86_64", "amd64"):
        return False, False, f"{flag} needs an x86-64 machine (this is {platform.machine()})"
    if shutil.which(compiler) is None:
        return False, False, f"{compiler} not found: install it"
    try:
        res = build([_probe_source()], f"abi_probe{flag}", compiler=compiler, cflags=(flag, "-O1"))
    except BuildError as exc:
        log = f"{exc}\n{exc.log}"
        # Missing multilib headers or crt/libc objects: the package is the fix.
        if any(s in log for s in ("No such file", "cannot find", "skipping incompatible")):
            return False, False, no_libc
        return False, False, f"cannot build {flag}: {exc}"
    try:
        proc = _run([str(res.path)], timeout=10)
    except OSError as exc:
        if exc.errno == errno.ENOEXEC:
            return True, False, no_kernel
        return True, False, f"{flag} binary does not run: {exc}"
    if proc.returncode != 0 or not proc.stdout.startswith("ok"):
        return True, False, f"{flag} binary exited with status {proc.returncode}"
    return True, True, f"builds and runs {flag} binaries"


@functools.lru_cache(maxsize=None)
def x32_runnable() -> Probe:
    """x32 ABI usable end to end: a -mx32 program builds (build cache) and executes."""
    _, ran, reason = _build_and_exec("-mx32", NO_X32_LIBC, NO_X32_KERNEL)
    return Probe(ran, reason)


@functools.lru_cache(maxsize=None)
def m32_buildable() -> Probe:
    """A -m32 (i386) program builds; the reason says whether it also runs."""
    built, ran, reason = _build_and_exec(
        "-m32", NO_M32_LIBC, "builds -m32, but this kernel cannot run i386 binaries (IA32_EMULATION off)"
    )
    return Probe(built, reason)


@functools.lru_cache(maxsize=None)
def clang_available() -> Probe:
    exe = shutil.which("clang")
    if exe is None:
        return Probe(False, "clang not found: install clang (apt-get install clang)")
    version = _first_line(_run([exe, "--version"]).stdout)
    return Probe(True, version or "clang", version)


@functools.lru_cache(maxsize=None)
def numa_nodes() -> Probe:
    """Number of online NUMA nodes (available when there are at least two to compare)."""
    from perflab.platform.topology import read_topology

    n = len(read_topology(Root("/")).nodes)
    if n < 2:
        return Probe(False, f"{n} NUMA node: memory-placement comparisons need at least two", n)
    return Probe(True, f"{n} NUMA nodes", n)


PROBES = {
    "perf": perf_status,
    "hw_counters": hw_counters,
    "x32": x32_runnable,
    "m32": m32_buildable,
    "clang": clang_available,
    "numa": numa_nodes,
}


def all_probes() -> dict[str, Probe]:
    """Every probe by name (each runs once per process)."""
    return {name: fn() for name, fn in PROBES.items()}


def clear_cache() -> None:
    """Forget every probe's answer (tests; after installing a package)."""
    for fn in PROBES.values():
        fn.cache_clear()
