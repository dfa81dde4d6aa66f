"""One root-aware reader for every /sys and /proc file perflab looks at.

Tests point a ``Root`` at an unpacked fixture tree (tests/data/topologies) instead of "/", the way
pyperf's ``proc_path()``/``sysfs_path()`` and hwloc's ``HWLOC_FSROOT`` do. Never walk these trees
following symlinks: sysfs links form loops (cpuN/nodeM -> node/nodeM -> cpuN ...).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from perflab.errors import PerflabError

# Linux's largest NR_CPUS is 8192; a list reaching far past it is damage or a typo, and
# expanding "0-999999999" would exhaust memory before anything could say so.
MAX_CPU_ID = 65535


@dataclass(frozen=True)
class Root:
    """A filesystem root under which /sys and /proc are read ("/" on a live machine)."""

    path: str = "/"

    def join(self, rel: str) -> str:
        return os.path.join(self.path, rel.lstrip("/"))

    def read(self, rel: str, default: str | None = None) -> str | None:
        """The file's text with trailing whitespace stripped, or ``default`` if unreadable."""
        try:
            with open(self.join(rel), encoding="utf-8", errors="replace") as fh:
                # Some snapshots carry NUL bytes in list files.
                return fh.read().replace("\x00", "").rstrip()
        except OSError:
            return default

    def read_int(self, rel: str, default: int | None = None) -> int | None:
        text = self.read(rel)
        if text is None:
            return default
        try:
            return int(text.split()[0], 0) if text.split() else default
        except ValueError:
            return default

    def read_cpulist(self, rel: str) -> list[int] | None:
        """A kernel CPU list file parsed (None if unreadable); a malformed one is named in one line."""
        text = self.read(rel)
        if text is None:
            return None
        try:
            return parse_cpulist(text)
        except ValueError as exc:
            raise PerflabError(
                f"malformed CPU list in {self.join(rel)}: {exc}; the tree is damaged or not a "
                "sysfs snapshot"
            ) from None

    def exists(self, rel: str) -> bool:
        return os.path.lexists(self.join(rel))

    def isdir(self, rel: str) -> bool:
        return os.path.isdir(self.join(rel))

    def listdir(self, rel: str, pattern: str | None = None) -> list[str]:
        """Entries of a directory (sorted naturally), optionally filtered by a full-match regex."""
        try:
            names = os.listdir(self.join(rel))
        except OSError:
            return []
        if pattern is not None:
            rx = re.compile(pattern)
            names = [n for n in names if rx.fullmatch(n)]
        return sorted(names, key=_natural_key)

    @property
    def is_live(self) -> bool:
        return os.path.realpath(self.path) == "/"

    def write(self, rel: str, text: str, append: bool = False) -> None:
        """Write ``text`` and a newline in one write(2), as ``echo text > file`` does; OSError as the
        kernel raises it. In a tree, a missing file is created (a new cgroup's control files) and
        ``append`` keeps earlier writes (what a cgroup.procs file has been told, in order)."""
        flags = os.O_WRONLY | (os.O_APPEND if append else os.O_TRUNC)
        if not self.is_live:
            flags |= os.O_CREAT
        fd = os.open(self.join(rel), flags, 0o644)
        try:
            os.write(fd, (text + "\n").encode())
        finally:
            os.close(fd)

    def mkdir(self, rel: str) -> None:
        os.mkdir(self.join(rel))

    def rmdir(self, rel: str) -> None:
        """Remove a cgroup directory: the kernel takes its control files with it; a tree's are
        plain files, removed first."""
        path = self.join(rel)
        if not self.is_live:
            for name in os.listdir(path):
                os.unlink(os.path.join(path, name))
        os.rmdir(path)


def _natural_key(name: str) -> list[object]:
    return [int(tok) if tok.isdigit() else tok for tok in re.split(r"(\d+)", name)]


def parse_cpulist(text: str | None) -> list[int]:
    """Parse a kernel list like ``0-3,8,10-11`` (empty string -> []); ValueError if malformed."""
    out: set[int] = set()
    if not text:
        return []
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        try:
            if "-" in part:
                lo_s, hi_s = part.split("-", 1)
                step = 1
                if ":" in hi_s:  # "0-31:2" stride form (rare, cgroup/isolcpus)
                    hi_s, s = hi_s.split(":", 1)
                    step = int(s.split("/")[0])
                lo, hi = int(lo_s), int(hi_s)
            else:
                lo = hi = int(part)
                step = 1
        except ValueError:
            raise ValueError(f"{part!r} is not a CPU number or range") from None
        if lo < 0 or hi < lo or step < 1:
            raise ValueError(f"{part!r} is not an ascending range of CPU numbers")
        if hi > MAX_CPU_ID:
            raise ValueError(f"CPU {hi} is beyond any machine (at most {MAX_CPU_ID})")
        out.update(range(lo, hi + 1, step))
    return sorted(out)


def parse_cpumask(text: str | None) -> list[int]:
    """Parse a hex mask in comma-separated 32-bit words, most significant first."""
    if not text:
        return []
    words = [w for w in text.strip().split(",") if w != ""]
    value = 0
    for w in words:
        value = (value << 32) | int(w, 16)
    cpus = []
    bit = 0
    while value:
        if value & 1:
            cpus.append(bit)
        value >>= 1
        bit += 1
    return cpus


def format_cpulist(cpus: "list[int] | tuple[int, ...] | set[int]") -> str:
    """Inverse of parse_cpulist: ``[0,1,2,3,8]`` -> ``0-3,8``."""
    s = sorted(set(cpus))
    parts = []
    i = 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and s[j + 1] == s[j] + 1:
            j += 1
        parts.append(str(s[i]) if i == j else f"{s[i]}-{s[j]}")
        i = j + 1
    return ",".join(parts)


def parse_size(text: str | None) -> int | None:
    """Cache sizes like ``32K``, ``1280K``, ``30M`` -> bytes."""
    if not text:
        return None
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)i?B?\s*", text, re.I)
    if not m:
        return None
    mult = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}[m.group(2).upper()]
    return int(m.group(1)) * mult


def format_size(n: int) -> str:
    """Inverse of parse_size, for people: 1536 -> '1.5 KiB'."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def cpuinfo_blocks(root: Root) -> list[dict[str, str]]:
    """/proc/cpuinfo as one dict per "processor" block (keys as the kernel writes them)."""
    text = root.read("proc/cpuinfo") or ""
    blocks: list[dict[str, str]] = []
    cur: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if cur:
                blocks.append(cur)
                cur = {}
            continue
        key, sep, value = line.partition(":")
        if sep:
            cur[key.strip()] = value.strip()
    if cur:
        blocks.append(cur)
    return blocks


def psi_some_total(text: str | None) -> int | None:
    """The "some" line's total (microseconds in which at least one task waited) of a
    /proc/pressure/{cpu,memory,io} file, None when absent."""
    for line in (text or "").splitlines():
        if line.startswith("some "):
            for field in line.split():
                if field.startswith("total="):
                    return int(field[6:])
    return None
