"""Can a variant be built here, and can this machine run it? Did its flags reach its build?

Before the build: is the compiler installed, does this kernel run x32 at all (no point building
what it will refuse), can -m32 link. After it: a trivial program built with the variant's ABI,
target and link flags is executed: ENOEXEC means the kernel refuses the ABI (x32 without
CONFIG_X86_X32_ABI), a missing loader means no 32-bit runtime, exit 3 the CPU lacks the -march
level. A project's own build may drop the flags it is given, so the built program is read back
(``flags_trace``): the compile switches gcc and clang record with ``-frecord-gcc-switches`` in
``.GCC.command.line``, and a build ID set with ``-Wl,--build-id=0x...`` that only a link which
received the variant's link flags can carry.
"""

from __future__ import annotations

import errno
import hashlib
import re
import struct
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


# -------------------------------------------------------------------------------------------
# Did the variant's flags reach the compile and the link of a project's own build?

#: added to every template build's compile flags (and link flags, where LTO compiles at the link):
#: the compiler writes its switches into the program's .GCC.command.line section
RECORD = "-frecord-gcc-switches"
# Switches the record leaves out or rewrites (-march=native becomes the CPU's name, -pg is "-p",
# -flto becomes a "GNU GIMPLE" unit compiled at the link), checked otherwise or not at all.
_NOT_RECORDED = re.compile(r"^-(march|mtune|mcpu)=native$|^-f(no-)?lto|^-fuse-ld")
_RECORDED = ("-O", "-f", "-m", "-g", "-std=")


def link_marker(key: str) -> str:
    """The 20-byte build ID (as long as ld's own sha1) that marks a link which got the link flags."""
    return hashlib.sha1(f"perflab-link:{key}".encode()).hexdigest()


def elf_sections(path: Path, names: tuple[str, ...]) -> dict[str, bytes] | None:
    """The named sections of an ELF file (ELF64 or ELF32, either byte order); None: not ELF."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if data[:4] != b"\x7fELF" or data[4] not in (1, 2):
        return None
    e = "<" if data[5] == 1 else ">"
    wide = data[4] == 2
    shoff = struct.unpack_from(e + ("Q" if wide else "I"), data, 0x28 if wide else 0x20)[0]
    shentsize, shnum, shstrndx = struct.unpack_from(e + "HHH", data, 0x3A if wide else 0x2E)
    if not shoff or shstrndx >= shnum:
        return {}

    def header(i: int) -> tuple[int, int, int, int]:
        name, typ, _flags, _addr, off, size = struct.unpack_from(e + ("IIQQQQ" if wide else "IIIIII"),
                                                                 data, shoff + i * shentsize)
        return name, typ, off, size

    _, _, stroff, strsize = header(shstrndx)
    strtab = data[stroff:stroff + strsize]
    out = {}
    for i in range(shnum):
        name, typ, off, size = header(i)
        label = strtab[name:strtab.find(b"\0", name)].decode(errors="replace")
        if label in names:
            out[label] = b"" if typ == 8 else data[off:off + size]  # SHT_NOBITS holds no bytes
    return out


def build_id(note: bytes) -> str:
    """The hex build ID of a .note.gnu.build-id section ('' when there is none)."""
    if len(note) < 16:
        return ""
    namesz, descsz = struct.unpack_from("<II", note, 0)
    start = 12 + (namesz + 3) // 4 * 4
    return note[start:start + descsz].hex()


def _family(flag: str) -> str:
    """Switches that override one another: -O levels, one -march=, -ffoo and -fno-foo."""
    if flag.startswith("-O"):
        return "-O"
    return re.sub(r"^-([fm])no-", r"-\1", flag.split("=", 1)[0])


def _missing(flag: str, tokens: list[str]) -> str:
    """'' when ``flag`` is the last word of its family on a recorded compile line, else why not."""
    same = [t for t in tokens if _family(t) == _family(flag)]
    if not same:
        return f"{flag} is not on the compile line"
    if same[-1] != flag:
        return f"{flag} is overridden by a later {same[-1]} on the compile line"
    return ""


def flags_trace(v: Variant, exe: Path, marker: str | None) -> str:
    """'' when the built program shows the variant's flags reached its compile (recorded switches)
    and, where it has link flags, its link (the build ID ``marker``); else one sentence why not."""
    secs = elf_sections(exe, (".GCC.command.line", ".note.gnu.build-id"))
    if secs is None:
        return ""  # not an ELF program (a wrapper script): nothing to read the flags from
    if marker is not None and build_id(secs.get(".note.gnu.build-id", b"")) != marker:
        return f"the link flags ({' '.join(v.link_flags)}) did not reach the link"
    units = [u.decode(errors="replace").split() for u in secs.get(".GCC.command.line", b"").split(b"\0")]
    units = [u for u in units if u]
    if not units:
        return (f"the compile flags did not reach the compiler ({RECORD}, passed with them, "
                f"recorded no compile line in {exe.name})")
    # gcc records an LTO program's units as "GNU GIMPLE" (compiled at the link), clang its driver lines
    if any(f.startswith("-flto") for f in v.cflags) and not any(
            u[:2] == ["GNU", "GIMPLE"] or any(t.startswith("-flto") for t in u) for u in units):
        return "-flto did not reach the compile: no unit of the program was compiled for the link"
    checked = [f for f in v.cflags if f.startswith(_RECORDED) and not _NOT_RECORDED.search(f) and f != RECORD]
    why = ""
    for unit in units:
        gaps = [m for f in checked if (m := _missing(f, unit))]
        if not gaps:
            return ""
        why = why or gaps[0]
    return f"the compile flags did not reach the compiler: {why} ({' '.join(units[0])})"
