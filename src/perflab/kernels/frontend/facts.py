"""Machine facts the front-end study sets its scan beside: TLB geometry (cpuid), the cache sizes
that a knee may sit at, the THP mode text pages need, and the code span perf sampled.

THP is a system setting: it is only ever switched (never -> madvise) when the user passed an
explicit option, and ``ThpChange`` restores it as its block ends, on errors and on Ctrl-C or
SIGTERM too (the campaign turns SIGTERM into KeyboardInterrupt, which unwinds through it).
"""

from __future__ import annotations

import math
import re
import subprocess
from pathlib import Path

from perflab.kernels.build import build
from perflab.platform.sysfs import Root

THP_ENABLED = "sys/kernel/mm/transparent_hugepage/enabled"
PAGE_BYTES = {"4K": 4 << 10, "2M": 2 << 20, "4M": 4 << 20, "1G": 1 << 30}
_HERE = Path(__file__).resolve().parent


def read_tlb() -> list[dict]:
    """This CPU's TLBs from cpuid (a tiny C program built through the build cache)."""
    res = build([_HERE / "cpuid_tlb.c"], "cpuid_tlb", compiler="gcc", cflags=("-O2",))
    out = subprocess.run([str(res.path)], capture_output=True, text=True, check=False, timeout=30)
    return parse_tlb(out.stdout)


def parse_tlb(text: str) -> list[dict]:
    """``tlb level=L type=T page=P entries=E source=S`` lines -> dicts."""
    tlbs = []
    for line in text.splitlines():
        if line.startswith("tlb "):
            kv = dict(tok.split("=", 1) for tok in line[4:].split(" source=")[0].split())
            tlbs.append({"level": int(kv["level"]), "type": kv["type"], "page": kv["page"],
                         "entries": int(kv["entries"]), "source": line.split("source=", 1)[1]})
    return tlbs


def references(tlbs: list[dict], topology) -> dict[str, int]:
    """Sizes a front-end knee may sit at: iTLB reach per level and page size, L1i, L2, L3."""
    refs: dict[str, int] = {}
    for t in tlbs:
        if t["type"] in ("instruction", "unified") and t["page"] in ("4K", "2M"):
            kind = "i" if t["type"] == "instruction" else "unified "
            refs[f"L{t['level']} {kind}TLB reach {t['page']} ({t['entries']} x {t['page']})"] = \
                t["entries"] * PAGE_BYTES[t["page"]]
    if topology is not None:
        for level, type_, name in ((1, "Instruction", "L1i"), (2, None, "L2"), (3, None, "L3")):
            caches = [c for c in topology.caches_of(level, type_) if c.size_bytes]
            if caches:
                refs[f"{name} cache"] = caches[0].size_bytes
    return refs


def nearest_reference(knee_bytes: int, refs: dict[str, int]) -> str | None:
    """The reference sizes within a factor of 2 of the knee, nearest first (log scale), or None.

    All of them are named, not just the nearest: with geometric steps a knee often sits between
    two references an octave apart, and picking one would claim a precision the scan lacks.
    """
    near = sorted((abs(math.log2(b / knee_bytes)), name, b) for name, b in refs.items()
                  if abs(math.log2(b / knee_bytes)) <= 1.01)  # a step of slack: knees sit on data points
    if not near:
        return None
    return ", ".join(f"{name} ({b / knee_bytes:.2g}x)" for _, name, b in near)


def thp_mode(root: Root = Root("/")) -> str | None:
    """The bracketed THP mode (always, madvise, never), or None without THP."""
    m = re.search(r"\[(\w+)\]", root.read(THP_ENABLED) or "")
    return m.group(1) if m else None


class ThpChange:
    """Switch THP from never to madvise for a scan when the user allowed it; restore on exit."""

    def __init__(self, allowed: bool, root: Root = Root("/")) -> None:
        self.allowed, self.root = allowed, root
        self.old: str | None = None

    def __enter__(self) -> str | None:
        mode = thp_mode(self.root)
        if mode == "never" and self.allowed:
            self._write("madvise")
            self.old = mode
            return "THP switched from never to madvise for this scan (restored afterwards)"
        return None

    def __exit__(self, *exc) -> None:
        if self.old is not None:
            self._write(self.old)
            self.old = None

    def _write(self, mode: str) -> None:
        with open(self.root.join(THP_ENABLED), "w") as fh:
            fh.write(mode)


def sampled_span(perf_data: Path, lo: int, hi: int) -> int | None:
    """Max - min sampled instruction address inside [lo, hi) of a perf.data (seed's sampled rip)."""
    if not perf_data.exists():
        return None
    out = subprocess.run(["perf", "script", "-i", str(perf_data), "-F", "ip"],
                         capture_output=True, text=True, check=False, timeout=120)
    ips = [int(tok, 16) for tok in out.stdout.split() if re.fullmatch(r"[0-9a-f]+", tok)]
    inside = [ip for ip in ips if lo <= ip < hi]
    if len(inside) < 2:
        return None
    return max(inside) - min(inside)
