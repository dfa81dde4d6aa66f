"""Call stacks of a window: `perf script` call chains folded into ``a;b;c count`` lines, and the
call tree they make (inclusive and self samples per frame, an interval across recordings).

With ``--call-graph`` perf keeps each sample's call chain; ``perf script`` prints it under the
sample, leaf first. A stack is folded root first, its frames named as the flat table names
functions (demangled, clone suffixes folded, ``[unknown] (object)`` where perf has no symbol),
so a frame of the flame graph and a row of the table are the same function. Weights are sample
counts, as Brendan Gregg's FlameGraph and inferno count folded lines: the folded lines of a
window sum to its samples. A recording keeps at most KEEP_STACKS distinct stacks with its stored
run; the rarest beyond them are summed into one ``[other]`` frame, as the flat table folds its
tail.

The interval of a frame's inclusive share across recordings (``--repeat``) is Student's t on
the per-recording shares (each recording one observation: the windows are the unit, samples
within a window are not independent draws), at the level the caller passes.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from perflab.measure.callgrind import context_frames
from perflab.studies.profile.parse import demangle, fold_symbol, function_key

STACK_FIELDS = "pid,tid,time,period,ip,sym,symoff,dso"  # perf script without -G: chains shown
KEEP_STACKS = 3000  # distinct stacks kept per recording (5 s at 4 kHz of minihlt: ~200)
OTHER = "[other]"
ROOT = "all"
SEP = ";"

# Sample header: ours ("9162/9162 313.802672848: 250000") or perf's default
# ("cksum 21807 [004] 1410598.116168: 250000 cycles:", period and event each optional).
_HEAD = re.compile(r"(?P<time>\d+\.\d+):\s*(?P<period>\d+)?\s*(?:(?P<event>[^\s:]+(?::\w+)?):)?\s*$")
# Chain line: "\t  7ff9aedbc3e0 sym+0x270 (/usr/lib/ld.so)"; the object may hold "(deleted)".
_FRAME = re.compile(r"^\s+(?P<ip>[0-9a-f]+)\s+(?P<sym>.*?)\s+\((?P<dso>[^()]*(?:\([^()]*\))?[^()]*)\)\s*$")
_OFF = re.compile(r"\+0x[0-9a-f]+$")


@dataclass(frozen=True)
class StackSample:
    time_ns: int | None
    period: int
    event: str
    frames: tuple[tuple[str, str], ...]  # (raw symbol, object), leaf first as perf prints them


def parse_stacks(text: str) -> list[StackSample]:
    """Samples with their call chains from `perf script` output (perflab's fields or perf's default)."""
    out: list[StackSample] = []
    head: re.Match[str] | None = None
    frames: list[tuple[str, str]] = []

    def flush() -> None:
        if head is not None and frames:
            t = head["time"]
            sec, _, frac = t.partition(".") if t else ("", "", "")
            out.append(StackSample(int(sec) * 10**9 + int(frac.ljust(9, "0")[:9]) if t else None,
                                   int(head["period"] or 1), head["event"] or "", tuple(frames)))

    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        if line[0] == "\t":  # perf indents chain lines with a tab, headers (pid right-aligned) with spaces
            m = _FRAME.match(line)
            if m and head is not None:
                frames.append((_OFF.sub("", m["sym"]), m["dso"]))
            continue
        flush()
        head, frames = _HEAD.search(line), []
    flush()
    return out


def _clean(name: str) -> str:
    # ';' separates frames in a folded line and a space its count: neither may be inside a name
    return name.replace(SEP, ":").replace("\n", " ")


def fold(samples: Iterable[StackSample], event: str | None = None) -> dict[str, int]:
    """Folded stacks (root first, named as the flat table names functions) -> sample counts."""
    chosen = [s for s in samples if event is None or not s.event or s.event == event]
    names = demangle(sym for s in chosen for sym, _ in s.frames)
    folded: Counter[str] = Counter()
    for s in chosen:
        folded[SEP.join(_clean(function_key(sym, dso, names)) for sym, dso in reversed(s.frames))] += 1
    return dict(folded)


def fold_contexts(contexts: Mapping[str, float]) -> dict[str, int]:
    """Callgrind's exclusive instructions per call context as folded stacks, root first (exact:
    counted, not sampled; a chain deeper than its callers kept starts at its last one)."""
    folded: Counter[str] = Counter()
    for ctx, cost in contexts.items():
        if cost:
            folded[SEP.join(_clean(fold_symbol(f)) for f in reversed(context_frames(ctx)))] += int(round(cost))
    return dict(folded)


def cap(stacks: Mapping[str, int], keep: int = KEEP_STACKS) -> dict[str, int]:
    """The `keep` most frequent stacks; the rest summed into one [other] stack."""
    ranked = sorted(stacks.items(), key=lambda kv: (-kv[1], kv[0]))
    out = dict(ranked[:keep])
    rest = sum(v for _, v in ranked[keep:])
    if rest:
        out[OTHER] = out.get(OTHER, 0) + rest
    return out


def merge_stacks(per: Sequence[Mapping[str, int]]) -> dict[str, int]:
    total: Counter[str] = Counter()
    for s in per:
        total.update(s)
    return dict(total)


def folded_lines(stacks: Mapping[str, int]) -> str:
    """FlameGraph's and inferno's input: one ``frame;frame;frame count`` line per stack."""
    return "".join(f"{k} {v}\n" for k, v in sorted(stacks.items()))


@dataclass
class Node:
    """One frame of the call tree: samples with what it called (total) and in itself (self_)."""

    name: str
    total: float = 0.0
    self_: float = 0.0
    children: dict[str, "Node"] = field(default_factory=dict)
    ci: tuple[float, float] | None = None  # inclusive share across recordings (Flame.level)
    # differential: share in A, the function's test (ratio, interval, level, Holm p, marked)
    a_share: float | None = None
    test: dict[str, Any] | None = None

    def child(self, name: str) -> "Node":
        n = self.children.get(name)
        if n is None:
            n = self.children[name] = Node(name)
        return n

    def walk(self, path: tuple[str, ...] = ()) -> Iterable[tuple[tuple[str, ...], "Node"]]:
        here = (*path, self.name)
        yield here, self
        for c in self.children.values():
            yield from c.walk(here)

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"n": self.name, "v": self.total, "s": self.self_}
        if self.children:
            d["c"] = [c.as_dict() for c in sorted(self.children.values(), key=lambda c: (-c.total, c.name))]
        if self.ci is not None:
            d["ci"] = list(self.ci)
        if self.a_share is not None:
            d["a"] = self.a_share
        if self.test is not None:
            d["t"] = self.test
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Node":
        n = cls(d["n"], d.get("v", 0.0), d.get("s", 0.0), ci=tuple(d["ci"]) if d.get("ci") else None,
                a_share=d.get("a"), test=d.get("t"))
        for c in d.get("c") or []:
            n.children[c["n"]] = cls.from_dict(c)
        return n


def tree(stacks: Mapping[str, float]) -> Node:
    """The call tree of folded stacks under one root frame ("all")."""
    root = Node(ROOT)
    for stack, count in stacks.items():
        node = root
        node.total += count
        for name in stack.split(SEP):
            node = node.child(name)
            node.total += count
        node.self_ += count
    return root


def prune(node: Node, min_share: float, total: float | None = None) -> Node:
    """Frames under min_share of the root dropped (their samples stay in their parent's total)."""
    total = node.total if total is None else total
    node.children = {k: prune(c, min_share, total) for k, c in node.children.items()
                     if total and c.total / total >= min_share}
    return node


def t_interval(xs: Sequence[float], level: float) -> tuple[float, float] | None:
    """Student's t interval of the mean (None with fewer than 2 values)."""
    n = len(xs)
    if n < 2:
        return None
    from scipy.stats import t as student

    m = sum(xs) / n
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    h = float(student.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    return (max(0.0, m - h), min(1.0, m + h))


def inclusive_shares(per: Sequence[Mapping[str, int]]) -> list[dict[tuple[str, ...], float]]:
    """Per recording, each frame path's inclusive share of that recording's samples."""
    out = []
    for stacks in per:
        t = tree(stacks)
        out.append({p: n.total / t.total for p, n in t.walk() if t.total})
    return out


@dataclass
class Flame:
    """The call tree of a profile's windows, for the flame graph and `--tree`."""

    root: Node
    recordings: int
    level: float = 0.95
    min_share: float = 0.001  # frames narrower than this were pruned from the stored tree

    def as_dict(self) -> dict[str, Any]:
        return {"root": self.root.as_dict(), "recordings": self.recordings, "level": self.level,
                "min_share": self.min_share}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> "Flame | None":
        if not d:
            return None
        return cls(Node.from_dict(d["root"]), d.get("recordings", 1), d.get("level", 0.95),
                   d.get("min_share", 0.001))


def flame(per: Sequence[Mapping[str, int]], level: float = 0.95, min_share: float = 0.001) -> Flame:
    """Merged call tree of the recordings, each frame with its interval across them (2+)."""
    root = tree(merge_stacks(per))
    if len(per) >= 2:
        shares = inclusive_shares(per)
        for path, node in root.walk():
            node.ci = t_interval([s.get(path, 0.0) for s in shares], level)
    return Flame(prune(root, min_share), len(per), level, min_share)
