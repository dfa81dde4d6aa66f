"""The caches Cachegrind simulates: I1, D1 and the last level (LL), each size, ways, line.

A simulated count is deterministic only for a fixed cache model, so the model is always explicit:
given (``--cache-model 'I1=32768,8,64 D1=32768,8,64 LL=33554432,16,64'``, so that a CI runner
and a laptop simulate the same caches) or read from this machine's sysfs (cpu0's L1 data, L1
instruction and highest-level cache), never left to Valgrind's own CPUID probe, which on this VM
reported a 320 MiB direct-mapped LL. Valgrind's simulator needs a power-of-two set count; a
detected cache without one (a 36 MiB 12-way L3 has 49152 sets) is simulated with the sets
rounded down to a power of two and the ways raised to keep the size, and the model says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from perflab.errors import PerflabError
from perflab.platform.sysfs import Root, parse_size

NAMES = ("I1", "D1", "LL")
MIN_LINE = 16  # Valgrind's own floor: a smaller line lets one instruction straddle three lines
# Where sysfs has no caches (a container without /sys, another architecture): a common x86
# core's L1s and an 8 MiB LL, named as the fallback in every output.
FALLBACK = "I1=32768,8,64 D1=32768,8,64 LL=8388608,16,64"
EXAMPLE = "write it like 'I1=32768,8,64 D1=32768,8,64 LL=33554432,16,64' (size in bytes, ways, line bytes)"


@dataclass(frozen=True)
class Cache:
    """One simulated cache: size in bytes, associativity (ways), line size in bytes."""

    size: int
    ways: int
    line: int

    @property
    def sets(self) -> int:
        return self.size // (self.ways * self.line)

    def option(self) -> str:
        return f"{self.size},{self.ways},{self.line}"


@dataclass(frozen=True)
class CacheModel:
    """I1, D1, LL and where they came from ('given', 'detected', 'fallback'), with notes."""

    i1: Cache
    d1: Cache
    ll: Cache
    source: str = "given"
    notes: tuple[str, ...] = ()

    def text(self) -> str:
        """The canonical form, accepted back by ``parse`` (stored in the campaign's config)."""
        return f"I1={self.i1.option()} D1={self.d1.option()} LL={self.ll.option()}"

    def valgrind_options(self) -> tuple[str, ...]:
        return (f"--I1={self.i1.option()}", f"--D1={self.d1.option()}", f"--LL={self.ll.option()}")


def _check(name: str, c: Cache, text: str) -> None:
    """Valgrind's own checks (cachegrind's check_cache), as one line each before any run."""
    why = None
    if c.line < MIN_LINE or c.line & (c.line - 1):
        why = f"line size {c.line} is not a power of two of at least {MIN_LINE}"
    elif c.size <= c.line:
        why = f"size {c.size} is not larger than the line {c.line}"
    elif c.ways < 1 or c.ways > c.size // c.line:
        why = f"{c.ways} ways do not fit {c.size // c.line} lines"
    elif c.size % (c.ways * c.line) or c.sets & (c.sets - 1):
        why = (f"{c.size} bytes / ({c.ways} ways x {c.line} bytes) is not a power-of-two set "
               "count, which Valgrind's simulator needs")
    if why:
        raise PerflabError(f"--cache-model {text!r}: {name} {why}: {EXAMPLE}")


def parse(text: str) -> CacheModel:
    """'I1=S,W,L D1=S,W,L LL=S,W,L' (spaces or semicolons between; all three named)."""
    found: dict[str, Cache] = {}
    for part in re.split(r"[\s;]+", (text or "").strip()):
        if not part:
            continue
        m = re.fullmatch(r"(\w+)=(\d+),(\d+),(\d+)", part)
        if not m or m.group(1).upper() not in NAMES:
            raise PerflabError(f"--cache-model {text!r}: {part!r} does not parse: {EXAMPLE}")
        name = m.group(1).upper()
        if name in found:
            raise PerflabError(f"--cache-model {text!r}: {name} is given twice: {EXAMPLE}")
        found[name] = Cache(int(m.group(2)), int(m.group(3)), int(m.group(4)))
    missing = [n for n in NAMES if n not in found]
    if missing:
        raise PerflabError(f"--cache-model {text!r}: {' and '.join(missing)} missing: {EXAMPLE}")
    for name in NAMES:
        _check(name, found[name], text)
    return CacheModel(found["I1"], found["D1"], found["LL"], "given")


def _simulable(name: str, c: Cache) -> tuple[Cache, str | None]:
    """The cache as Valgrind can simulate it: a power-of-two set count (see the module doc)."""
    if c.size % (c.ways * c.line) == 0 and not c.sets & (c.sets - 1):
        return c, None
    sets = 1 << max(0, (c.size // (c.ways * c.line)).bit_length() - 1)
    ways = max(1, c.size // (sets * c.line))
    tweaked = Cache(sets * ways * c.line, ways, c.line)
    return tweaked, (f"{name} {c.size} bytes {c.ways}-way has {c.size / (c.ways * c.line):g} sets, "
                     f"not a power of two: simulated as {tweaked.size} bytes {ways}-way")


def detect(root: Root = Root("/")) -> CacheModel:
    """cpu0's L1 instruction, L1 data and highest-level cache from sysfs (FALLBACK without)."""
    base = "sys/devices/system/cpu/cpu0/cache"
    l1i = l1d = None
    last: tuple[int, Cache] | None = None
    for idx in root.listdir(base, r"index\d+"):
        d = f"{base}/{idx}"
        level, kind = root.read_int(f"{d}/level"), root.read(f"{d}/type") or ""
        size, ways = parse_size(root.read(f"{d}/size")), root.read_int(f"{d}/ways_of_associativity")
        line = root.read_int(f"{d}/coherency_line_size")
        if not (level and size and ways and line):
            continue  # fully associative caches report ways 0; no simulable description
        c = Cache(size, ways, line)
        if level == 1 and kind == "Instruction":
            l1i = c
        elif level == 1 and kind == "Data":
            l1d = c
        if kind in ("Unified", "Data") and (last is None or level > last[0]):
            last = (level, c)
    if l1i is None or l1d is None or last is None or last[0] < 2:
        fallback = parse(FALLBACK)
        return CacheModel(fallback.i1, fallback.d1, fallback.ll, "fallback",
                          (f"{root.join(base)} does not describe I1, D1 and a last-level cache: "
                           "simulating a common x86 model; give --cache-model to choose",))
    notes = []
    out = {}
    for name, c in (("I1", l1i), ("D1", l1d), ("LL", last[1])):
        out[name], note = _simulable(name, c)
        if note:
            notes.append(note)
    return CacheModel(out["I1"], out["D1"], out["LL"], "detected", tuple(notes))


def resolve(text: str | None, root: Root = Root("/")) -> CacheModel:
    """The model a campaign simulates: the given one, or this machine's."""
    return parse(text) if text else detect(root)
