"""Can a variant be built here, and can this machine run it? One line saying why not.

Before the build: is the compiler installed, does this kernel run x32 at all (no point building
what it will refuse), can -m32 link. After it: a trivial program built with the variant's ABI,
target and link flags is executed: ENOEXEC means the kernel refuses the ABI (x32 without
CONFIG_X86_X32_ABI), a missing loader means no 32-bit runtime, exit 3 the CPU lacks the -march
level.
"""

from __future__ import annotations

import errno
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from perflab.kernels import abi
from perflab.kernels.variants import Variant, VariantBuild
from perflab.platform import probes
from perflab.startup import which


@dataclass(frozen=True)
class VariantProbe:
    """Whether a variant can be built / run here, and the one-line reason when not."""

    available: bool
    reason: str = ""


X32_REFUSED = ("cannot run -mx32: exec format error: x32 is not supported by this kernel "
               "(CONFIG_X86_X32_ABI not set)")

_PROBE_C = r"""
int main(void) {
#ifdef PERFLAB_LEVEL
    __builtin_cpu_init();
    if (!__builtin_cpu_supports(PERFLAB_LEVEL)) return 3;
#endif
    return 0;
}
"""


def default_probe(v: Variant, vb: VariantBuild | None) -> VariantProbe:
    """Before the build: is the compiler there, can this ABI link? After: can this machine run it?

    The run probe builds a trivial program with the variant's ABI, target and link flags and
    executes it: ENOEXEC means the kernel refuses the ABI (x32 without CONFIG_X86_X32_ABI), a
    missing loader means no 32-bit runtime, exit 3 means the CPU lacks the -march level.
    """
    compiler = v.driver("c")
    if vb is None:
        if which(compiler) is None:
            clang = probes.clang_available() if compiler.startswith("clang") else None
            why = clang.reason if clang is not None and not clang.available else f"{compiler} not installed"
            return VariantProbe(False, f"cannot build: {why}")
        if v.abi == "mx32":
            # no point building what this kernel will refuse to run
            p = abi.x32_runnable()
            if not p.available and "CONFIG_X86_X32" in p.reason:
                return VariantProbe(False, X32_REFUSED)
        if v.abi == "m32":
            p = abi.m32_buildable()
            if not p.available:
                return VariantProbe(False, f"cannot build -m32: {p.reason}")
        return VariantProbe(True)
    if v.abi == "mx32":
        p = abi.x32_runnable()
        if not p.available:
            return VariantProbe(False, X32_REFUSED if "CONFIG_X86_X32" in p.reason else f"cannot run -mx32: {p.reason}")
    flags = [f for f in v.cflags if f.startswith(("-m", "-static"))]
    level = next((f.split("=", 1)[1] for f in v.cflags if f.startswith("-march=x86-64-v")), None)
    with tempfile.TemporaryDirectory(prefix="perflab-probe-") as tmp:
        src, exe = Path(tmp) / "probe.c", Path(tmp) / "probe"
        src.write_text(_PROBE_C)
        defs = [f'-DPERFLAB_LEVEL="{level}"'] if level else []
        proc = subprocess.run([compiler, *flags, *defs, str(src), "-o", str(exe)],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            first = next((ln for ln in proc.stderr.splitlines() if "error" in ln), proc.stderr.strip()[:200])
            return VariantProbe(False, f"cannot build a trivial {' '.join(flags) or 'default'} program: {first}")
        try:
            rc = subprocess.run([str(exe)], capture_output=True, check=False, timeout=30).returncode
        except OSError as exc:
            if exc.errno == errno.ENOEXEC:
                if v.abi == "mx32":
                    return VariantProbe(False, X32_REFUSED)
                return VariantProbe(False, f"cannot run: exec format error ({exc})")
            if exc.errno == errno.ENOENT:
                return VariantProbe(False, "cannot run: the program's loader is missing "
                                    "(no runtime for this ABI installed)")
            return VariantProbe(False, f"cannot run: {exc}")
        if rc == 3 and level:
            return VariantProbe(False, f"cannot run -march={level}: this CPU lacks its instructions")
        if rc != 0:
            return VariantProbe(False, f"a trivial program built this way exits with {rc}")
    return VariantProbe(True)
