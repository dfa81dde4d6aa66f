"""One root-aware reader for every /sys and /proc file perflab looks at.

Tests point a ``Root`` at an unpacked fixture tree (../shared/topologies) instead of "/", the way
pyperf's ``proc_path()``/``sysfs_path()`` and hwloc's ``HWLOC_FSROOT`` do. Never walk these trees
following symlinks: sysfs links form loops (cpuN/nodeM -> node/nodeM -> cpuN ...).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass


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


def _natural_key(name: str) -> list[object]:
    return [int(tok) if tok.isdigit() else tok for tok in re.split(r"(\d+)", name)]


def parse_cpulist(text: str | None) -> list[int]:
    """Parse a kernel list like ``0-3,8,10-11`` (empty string -> [])."""
    out: list[int] = []
    if not text:
        return out
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            step = 1
            if ":" in hi:  # "0-31:2" stride form (rare, cgroup/isolcpus)
                hi, s = hi.split(":", 1)
                step = int(s.split("/")[0])
            out.extend(range(int(lo), int(hi) + 1, step))
        else:
            out.append(int(part))
    return sorted(set(out))


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
