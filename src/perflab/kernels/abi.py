"""Can this machine build and run programs of another ABI (-m32, -mx32)? Each probe builds a
tiny program through the build cache and executes it, once per process, and says in one line
what works or what is missing (a multilib package, kernel support for x32)."""

from __future__ import annotations

# subprocess is imported where a probe runs: `perflab run` starts without it.
import errno
import functools
import os
import platform
from pathlib import Path

from perflab.kernels.build import BuildError, build, cache_root
from perflab.platform.probes import Probe
from perflab.startup import which

NO_X32_KERNEL = "this kernel cannot run x32 binaries (CONFIG_X86_X32_ABI not set)"
NO_X32_LIBC = "cannot build -mx32: install libc6-dev-x32"
NO_M32_LIBC = "cannot build -m32: install gcc-multilib (libc6-dev-i386)"

_PROBE_SOURCE = (
    "#include <stdio.h>\n"
    "int main(void) { printf(\"ok %d\\n\", (int)(sizeof(void *) * 8)); return 0; }\n"
)


def _probe_source() -> Path:
    src = cache_root() / "probes" / "abi_probe.c"
    if not src.exists() or src.read_text() != _PROBE_SOURCE:
        src.parent.mkdir(parents=True, exist_ok=True)
        tmp = src.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_PROBE_SOURCE)
        os.replace(tmp, src)
    return src


def _build_and_exec(flag: str, no_libc: str, no_kernel: str, compiler: str = "gcc") -> tuple[bool, bool, str]:
    """(built, ran, reason) for the probe program compiled with ``flag``."""
    import subprocess
    if platform.machine() not in ("x86_64", "amd64"):
        return False, False, f"{flag} needs an x86-64 machine (this is {platform.machine()})"
    if which(compiler) is None:
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
        proc = subprocess.run([str(res.path)], capture_output=True, text=True, timeout=10, check=False)
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


PROBES = {"x32": x32_runnable, "m32": m32_buildable}


def abi_probes() -> dict[str, Probe]:
    """The ABI probes by name (each builds and runs once per process)."""
    return {name: fn() for name, fn in PROBES.items()}


def clear_cache() -> None:
    for fn in PROBES.values():
        fn.cache_clear()
