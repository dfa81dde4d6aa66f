"""Build cache: compile sources with the system compiler, keyed by sources, flags and compiler.

A rebuild happens only when a source's bytes, a flag, the compiler's version or an extra input
(e.g. a PGO profile) changes, so a rerun of a study measures without rebuilding.
"""

from __future__ import annotations

# subprocess and tempfile are imported in the functions that use them: `perflab run` starts
# without either (bench/startup.sh).
import functools
import hashlib
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from perflab.errors import PerflabError
from perflab.platform import cache_dir
from perflab.startup import which


class BuildError(PerflabError):
    """A compiler or linker failure; the message carries the first error line."""

    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message)
        self.log = log


@dataclass(frozen=True)
class BuildResult:
    path: Path  # the built executable (or object/library), inside the cache
    key: str  # the cache key (hex)
    cached: bool  # True when no compiler ran
    command: tuple[str, ...]
    log: str = ""
    extra: dict = field(default_factory=dict)


def cache_root() -> Path:
    """$PERFLAB_CACHE, else $XDG_CACHE_HOME/perflab, else ~/.cache/perflab."""
    return Path(cache_dir())


@functools.lru_cache(maxsize=None)
def compiler_version(compiler: str) -> str:
    """First line of ``compiler --version``; a missing compiler raises BuildError."""
    import subprocess
    exe = which(compiler)
    if exe is None:
        raise BuildError(f"compiler '{compiler}' not found: install it (e.g. apt-get install {compiler})")
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False)
    return (out.stdout or out.stderr).splitlines()[0] if (out.stdout or out.stderr) else exe


def build_key(
    sources: Sequence[Path], compiler: str, flags: Sequence[str], extra_inputs: Sequence[Path] = ()
) -> str:
    h = hashlib.sha256()
    h.update(compiler_version(compiler).encode())
    h.update(b"\0" + compiler.encode())
    for f in flags:
        h.update(b"\0F" + f.encode())
    for src in list(sources) + list(extra_inputs):
        h.update(b"\0S" + Path(src).name.encode() + b"\0")
        h.update(Path(src).read_bytes())
    return h.hexdigest()[:24]


def build(
    sources: Sequence[Path | str],
    output_name: str,
    *,
    compiler: str = "g++",
    cflags: Sequence[str] = ("-O2",),
    ldflags: Sequence[str] = (),
    extra_inputs: Sequence[Path | str] = (),
    cwd_files: Sequence[Path | str] = (),
    cache_dir: Path | None = None,
    link_line: Sequence[str] | None = None,
) -> BuildResult:
    """Compile ``sources`` into ``<cache>/builds/<key>/<output_name>`` unless already there.

    ``extra_inputs`` take part in the key without being compiled (headers, PGO profiles).
    ``link_line`` replaces the default ``sources + ldflags`` order when a study needs to control
    the order of objects and libraries itself (the link-order trap of seed 003); ``{src}`` items
    in it expand to the sources.
    """
    import tempfile
    import subprocess
    srcs = [Path(s).resolve() for s in sources]
    extras = [Path(s).resolve() for s in extra_inputs]
    for s in srcs + extras:
        if not s.is_file():
            raise BuildError(f"source file not found: {s}")
    flags = list(cflags) + ["|"] + list(ldflags) + ["|"] + list(link_line or [])
    key = build_key(srcs, compiler, flags, extras)
    root = (cache_dir or cache_root()) / "builds" / key
    out = root / output_name
    if out.exists():
        log = (root / "build.log").read_text() if (root / "build.log").exists() else ""
        stored = tuple((root / "command").read_text().split("\0")) if (root / "command").exists() else ()
        return BuildResult(out, key, True, stored, log)

    root.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=root.parent))
    try:
        for f in cwd_files:
            shutil.copy2(f, tmp)
        if link_line is not None:
            middle: list[str] = []
            for item in link_line:
                middle.extend(str(s) for s in srcs) if item == "{src}" else middle.append(item)
        else:
            middle = [str(s) for s in srcs] + list(ldflags)
        cmd = [compiler, *cflags, "-o", str(tmp / output_name), *middle]
        proc = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, check=False)
        log = proc.stdout + proc.stderr
        if proc.returncode != 0:
            first = next((ln for ln in log.splitlines() if "error" in ln.lower()), log.strip()[:300])
            raise BuildError(f"build of {output_name} failed ({' '.join(cflags)}): {first.strip()}", log)
        (tmp / "build.log").write_text(log)
        # Record the command as if run in its final place, so it can be pasted and rerun.
        cmd = [c.replace(str(tmp), str(root)) for c in cmd]
        (tmp / "command").write_text("\0".join(cmd))
        try:
            os.rename(tmp, root)  # atomic publish; a concurrent builder may have won the race
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
        return BuildResult(root / output_name, key, False, tuple(cmd), log)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
