"""Seed 003's library-order trap: an archive placed before the objects that need it is skipped.

``check_link_order`` reads a link command and names each archive that comes before an object
needing its symbols; ``linkorder_demo`` is the measured demonstration (a loop over sin() with a
fast sin in ``libmopt.a``, linked objects-first and archive-first).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from perflab.kernels.build import BuildError, build_key, cache_root
from perflab.kernels.variants import BuildTarget, Variant
from perflab.model import MetricPattern, Workload


@dataclass(frozen=True)
class LinkOrderIssue:
    library: str  # as written on the line: -lmopt or path/libmopt.a
    archive: str  # the file the linker would search
    needed_by: str  # the first later input that references one of its symbols
    symbols: tuple[str, ...]
    resolved_from: str | None  # a later library that will supply the symbols instead, if any

    @property
    def message(self) -> str:
        sym = ", ".join(self.symbols[:3])
        tail = (f"; {sym} will come from {self.resolved_from} instead" if self.resolved_from
                else "; the link fails or picks another definition")
        return (f"link order: {self.library} ({Path(self.archive).name}, an archive) comes before "
                f"{Path(self.needed_by).name}, which needs {sym} from it: the linker skips it{tail}. "
                f"Put objects first, then archives, then shared libraries")


_SRC_EXT = (".c", ".cc", ".cpp", ".cxx", ".C", ".c++")


def _search_dirs(compiler: str, flags: Sequence[str]) -> list[Path]:
    dirs = [Path(f[2:]) for f in flags if f.startswith("-L") and len(f) > 2]
    try:
        out = subprocess.run([compiler, *[f for f in flags if f.startswith("-m")], "-print-search-dirs"],
                             capture_output=True, text=True, check=False).stdout
    except OSError:
        out = ""
    for line in out.splitlines():
        if line.startswith("libraries:"):
            dirs += [Path(p) for p in line.split("=", 1)[-1].split(":") if p]
    return dirs


def _resolve_lib(name: str, dirs: Sequence[Path], static: bool) -> Path | None:
    for d in dirs:
        for cand in ([f"lib{name}.a"] if static else [f"lib{name}.so", f"lib{name}.a"]):
            p = d / cand
            if p.exists():
                return p.resolve()
    return None


def _nm(path: Path, *args: str) -> set[str]:
    proc = subprocess.run(["nm", *args, str(path)], capture_output=True, text=True, check=False)
    syms = set()
    for line in proc.stdout.splitlines():
        parts = line.split()
        if parts and not line.endswith(":"):
            syms.add(parts[-1].split("@")[0])
    return syms


def _defined(path: Path) -> set[str]:
    head = path.read_bytes()[:512] if path.is_file() else b""
    if not head.startswith(b"\x7fELF") and not head.startswith(b"!<arch>"):
        # a linker script such as Debian's libm.so: GROUP ( /lib/.../libm.so.6 ... )
        text = path.read_text(errors="replace")
        syms: set[str] = set()
        for m in re.finditer(r"(/[^\s()]+)", text):
            p = Path(m.group(1))
            if p.exists() and p != path:
                syms |= _defined(p)
        return syms
    args = ("-g", "--defined-only") + (("-D",) if ".so" in path.name else ())
    return _nm(path, *args)


def check_link_order(command: Sequence[str], cwd: str | Path | None = None) -> list[LinkOrderIssue]:
    """Find archives on a link command that come before the objects needing their symbols.

    Archives resolve only symbols already undefined when the linker reaches them (seed 003), so
    an ``-lX``/``libX.a`` that defines a symbol a *later* object or source references is skipped.
    Sources on the line are compiled to temporary objects to read their undefined symbols (nm).
    """
    if not command:
        return []
    compiler, args = command[0], list(command[1:])
    if "-c" in args or "-S" in args or "-E" in args:
        return []
    base = Path(cwd) if cwd else Path.cwd()
    static = "-static" in args
    dirs: list[Path] | None = None
    inputs: list[tuple[str, Path, str]] = []  # (as written, path, kind: obj|src|archive|shared)
    skip_next = False
    for i, a in enumerate(args):
        if skip_next:
            skip_next = False
            continue
        if a in ("-o", "-x", "-include", "-I", "-L", "-MF", "-MT"):
            skip_next = True
            continue
        if a.startswith("-l") and len(a) > 2:
            if dirs is None:
                dirs = _search_dirs(compiler, args)
            p = _resolve_lib(a[2:], dirs, static)
            if p is not None:
                inputs.append((a, p, "archive" if p.suffix == ".a" else "shared"))
        elif not a.startswith("-"):
            p = Path(a) if Path(a).is_absolute() else base / a
            if a.endswith(".a"):
                inputs.append((a, p, "archive"))
            elif a.endswith(".o"):
                inputs.append((a, p, "obj"))
            elif a.endswith(_SRC_EXT):
                inputs.append((a, p, "src"))
            elif ".so" in Path(a).name:
                inputs.append((a, p, "shared"))
    undef_cache: dict[int, set[str]] = {}
    cflags = [a for a in args if a.startswith(("-m", "-O", "-D", "-I", "-std", "-f"))
              and not a.startswith(("-fprofile", "-flto"))]

    def undefined(idx: int) -> set[str]:
        if idx not in undef_cache:
            _, p, kind = inputs[idx]
            if kind == "obj":
                undef_cache[idx] = _nm(p, "-u")
            else:
                with tempfile.TemporaryDirectory() as tmp:
                    obj = Path(tmp) / "probe.o"
                    subprocess.run([compiler, *cflags, "-c", str(p), "-o", str(obj)],
                                   capture_output=True, check=False)
                    undef_cache[idx] = _nm(obj, "-u") if obj.exists() else set()
        return undef_cache[idx]

    issues = []
    for i, (written, path, kind) in enumerate(inputs):
        if kind != "archive" or not path.exists():
            continue
        defined = _defined(path)
        # symbols still undefined before the archive could be taken from it: those are fine
        before: set[str] = set()
        for j in range(i):
            if inputs[j][2] in ("obj", "src"):
                before |= undefined(j)
        for j in range(i + 1, len(inputs)):
            if inputs[j][2] not in ("obj", "src"):
                continue
            need = sorted((undefined(j) & defined) - before)
            if need:
                resolved = None
                for k in range(j + 1, len(inputs)):
                    if inputs[k][2] in ("archive", "shared") and inputs[k][1].exists() and \
                            set(need) & _defined(inputs[k][1]):
                        resolved = inputs[k][0]
                        break
                if resolved is None:
                    for k in range(i):
                        if inputs[k][2] == "shared" and set(need) & _defined(inputs[k][1]):
                            resolved = inputs[k][0]
                            break
                issues.append(LinkOrderIssue(written, str(path), str(inputs[j][1]), tuple(need), resolved))
                break
    return issues


def linkorder_archive(cache_dir: Path | None = None, compiler: str = "gcc") -> Path:
    """Build (cached) libmopt.a, the fast-sin archive of the link-order demonstration."""
    here = Path(__file__).resolve().parent / "linkorder"
    src = here / "mopt.c"
    key = build_key([src], compiler, ["-O2", "ar"])
    d = (cache_dir or cache_root()) / "linkorder" / key
    lib = d / "libmopt.a"
    if lib.exists():
        return lib
    d.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=d))
    obj = tmp / "mopt.o"
    for cmd in ([compiler, "-O2", "-c", str(src), "-o", str(obj)], ["ar", "rcs", str(tmp / "libmopt.a"), str(obj)]):
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise BuildError(f"building libmopt.a failed: {proc.stderr.strip()[:200]}")
    os.replace(tmp / "libmopt.a", lib)
    return lib


def linkorder_demo(iterations: int = 20_000_000, cache_dir: Path | None = None):
    """Target, workload and the two variants (objects first / archive first) of seed 003's trap."""
    here = Path(__file__).resolve().parent / "linkorder"
    lib = linkorder_archive(cache_dir)
    target = BuildTarget("sinloop", (here / "sinloop.c",), language="c", extra_inputs=(lib,))
    wl = Workload(
        name="sinloop", argv=("{exe}", str(iterations)),
        metrics=(MetricPattern(r"checksum (?P<checksum>\S+)"),), checksum_metric="checksum",
    )
    good = Variant("objects-first", ("-O2",), link_line=("{src}", f"-L{lib.parent}", "-lmopt", "-lm"))
    bad = Variant("archive-first", ("-O2",), link_line=(f"-L{lib.parent}", "-lmopt", "{src}", "-lm"))
    return target, wl, (good, bad)
