"""Turn perf.data into tables: samples from `perf script`, top functions, annotation, diffs.

perflab aggregates `perf script` lines itself rather than parsing `perf report`: every sample keeps
its timestamp (to check it lies in the window) and its offset in the function (for the
first-instructions detector), and symbols can be folded across rebuilds before summing.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from perflab.errors import PerflabError
from perflab.measure.window import WindowRecorder
from perflab.measure.window_perf import PerfWindowRecorder
from perflab.startup import which

SCRIPT_FIELDS = "pid,tid,time,period,ip,sym,symoff,dso"
# " 9162/9162    313.802672848:     250000      7ff9aedbc3e0 sym+0x270 (/usr/lib/ld.so)"
_LINE = re.compile(
    r"^\s*(?P<pid>-?\d+)/(?P<tid>-?\d+)\s+(?P<time>\d+\.\d+):\s+(?P<period>\d+)\s+"
    r"(?P<ip>[0-9a-f]+)\s+(?P<sym>.*?)\s+\((?P<dso>[^()]*)\)\s*$"
)
_SYMOFF = re.compile(r"^(?P<name>.+)\+0x(?P<off>[0-9a-f]+)$")

# GCC/LLVM clone and split suffixes that change between builds of the same function:
# foo.constprop.0, foo.isra.3, foo.part.1, foo.lto_priv.0, foo.cold, foo.constprop.0.isra.0 ...
_CLONE_SUFFIX = re.compile(
    r"(?:\.(?:constprop|isra|part|lto_priv|cold|clone|localalias|llvm|specialized)(?:\.\d+)*)+$"
)
# c++filt renders the same clones as "foo(int) [clone .constprop.0] [clone .isra.0]"
_CLONE_DEMANGLED = re.compile(r"(?:\s*\[clone \.[^\]]*\])+")


def fold_symbol(name: str) -> str:
    """Fold clone suffixes (.constprop.N, .isra.N, .part.N, .lto_priv.N, .cold, combinations)."""
    name = _CLONE_DEMANGLED.sub("", name)
    return _CLONE_SUFFIX.sub("", name) or name


def demangle(names: Iterable[str]) -> dict[str, str]:
    """Demangle C++ names in one c++filt call (identity where c++filt is missing)."""
    uniq = sorted(set(names))
    out = {n: n for n in uniq}
    todo = [n for n in uniq if n.startswith("_Z")]
    cxxfilt = which("c++filt")
    if not todo or cxxfilt is None:
        return out
    # Clone suffixes confuse nothing in c++filt, but fold after demangling to catch both spellings.
    res = subprocess.run([cxxfilt], input="\n".join(todo) + "\n", capture_output=True, text=True)
    lines = res.stdout.splitlines()
    if res.returncode == 0 and len(lines) == len(todo):
        out.update(zip(todo, lines))
    return out


@dataclass(frozen=True)
class Sample:
    time_ns: int  # perf clock (CLOCK_MONOTONIC when recorded with -k CLOCK_MONOTONIC)
    pid: int
    tid: int
    period: int
    ip: int
    sym: str  # raw (mangled) symbol, "[unknown]" when perf could not resolve it
    offset: int | None
    dso: str


def parse_script(text: str) -> list[Sample]:
    """Parse `perf script -F pid,tid,time,period,ip,sym,symoff,dso --ns` output."""
    samples = []
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        sym, off = m["sym"], None
        so = _SYMOFF.match(sym)
        if so:
            sym, off = so["name"], int(so["off"], 16)
        sec, _, frac = m["time"].partition(".")
        samples.append(Sample(
            time_ns=int(sec) * 1_000_000_000 + int(frac.ljust(9, "0")[:9]),
            pid=int(m["pid"]), tid=int(m["tid"]), period=int(m["period"]), ip=int(m["ip"], 16),
            sym=sym, offset=off, dso=m["dso"],
        ))
    return samples


def read_samples(perf_data: str, recorder: WindowRecorder | None = None) -> list[Sample]:
    """All samples of a perf.data file (call chains hidden, names left mangled)."""
    if recorder is None:
        recorder = PerfWindowRecorder()
        if not Path(perf_data).exists():
            raise PerflabError(f"{perf_data}: no such perf.data file; give a path or a stored campaign id")
    return parse_script(recorder.perf_script(perf_data, SCRIPT_FIELDS))


@dataclass
class Function:
    """One (folded) function's samples in one profile."""

    key: str  # folded, demangled symbol: the name matched across profiles
    dso: str  # the shared object holding most of its samples
    samples: int = 0
    period: int = 0
    raw_names: set[str] = field(default_factory=set)
    offsets: Counter = field(default_factory=Counter)  # byte offset in function -> period

    @property
    def dso_name(self) -> str:
        return Path(self.dso).name if self.dso.startswith("/") else self.dso


@dataclass
class Profile:
    samples: int
    period: int
    functions: dict[str, Function]
    first_ns: int | None = None
    last_ns: int | None = None

    def share(self, key: str) -> float:
        f = self.functions.get(key)
        return f.period / self.period if f and self.period else 0.0


def function_key(sym: str, dso: str, demangled: dict[str, str]) -> str:
    if sym == "[unknown]":
        return f"[unknown] ({Path(dso).name})"
    return fold_symbol(demangled.get(sym, sym))


def aggregate(samples: Sequence[Sample]) -> Profile:
    """Sum samples by folded function (the period is the weight, as perf report uses)."""
    names = demangle(s.sym for s in samples)
    funcs: dict[str, Function] = {}
    dsos: dict[str, Counter] = {}
    for s in samples:
        key = function_key(s.sym, s.dso, names)
        f = funcs.get(key)
        if f is None:
            f = funcs[key] = Function(key=key, dso=s.dso)
            dsos[key] = Counter()
        f.samples += 1
        f.period += s.period
        f.raw_names.add(s.sym)
        dsos[key][s.dso] += s.period
        if s.offset is not None:
            f.offsets[s.offset] += s.period
    for key, c in dsos.items():
        funcs[key].dso = c.most_common(1)[0][0]
    return Profile(
        samples=len(samples), period=sum(s.period for s in samples), functions=funcs,
        first_ns=min((s.time_ns for s in samples), default=None),
        last_ns=max((s.time_ns for s in samples), default=None),
    )


@dataclass(frozen=True)
class TopRow:
    symbol: str
    dso: str
    share: float
    samples: int

    def as_dict(self) -> dict[str, object]:
        return {"symbol": self.symbol, "dso": self.dso, "share": self.share, "samples": self.samples}


def top_functions(profile: Profile, threshold: float = 0.01) -> list[TopRow]:
    """Functions holding at least `threshold` of the samples' period, largest first."""
    rows = [
        TopRow(f.key, f.dso_name, f.period / profile.period, f.samples)
        for f in profile.functions.values() if profile.period and f.period / profile.period >= threshold
    ]
    return sorted(rows, key=lambda r: (-r.share, r.symbol))


def strip_params(name: str) -> str:
    """'ns::f<int>(double) const' -> 'ns::f<int>' (perf report's spelling of C++ names)."""
    depth = 0
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0 and i > 0 and not name[:i].endswith("operator"):
            return name[:i]
    return name


# --- annotation and the seed's first-instructions pattern -----------------------------------

_ANNOT = re.compile(r"^\s*(?P<pct>\d+\.\d+)\s*:\s+(?P<addr>[0-9a-f]+):\s+(?P<insn>.*)$")


@dataclass
class Annotation:
    symbol: str
    dso: str
    samples: int
    instructions: list[tuple[int, str, float]]  # (address, instruction, share of the function)
    head_share: float  # share of the function's samples on its first instructions
    head_desc: str  # "first 4 instructions" or "first 16 bytes"
    front_end_hint: bool

    def as_dict(self) -> dict[str, object]:
        return {
            "symbol": self.symbol, "dso": self.dso, "samples": self.samples,
            "head_share": self.head_share, "head": self.head_desc,
            "front_end_hint": self.front_end_hint,
            "instructions": [
                {"addr": hex(a), "insn": i, "share": s} for a, i, s in self.instructions
            ],
        }


def parse_annotate(text: str) -> list[tuple[int, str, float]]:
    """(address, instruction, percent/100) rows of `perf annotate --stdio --no-source`."""
    rows = []
    for line in text.splitlines():
        m = _ANNOT.match(line)
        if m:
            rows.append((int(m["addr"], 16), m["insn"].strip(), float(m["pct"]) / 100.0))
    return rows


def annotate(perf_data: str, func: Function, recorder: WindowRecorder, *, head_insns: int = 4,
             head_bytes: int = 16, hint_share: float = 0.30) -> Annotation:
    """Per-instruction shares of one function, and whether its first instructions are hot.

    The seed's pattern: many samples on a function's first instructions (push, mov of a
    literal), which cannot cost that much themselves, point at instruction fetch (i-cache/iTLB
    misses on entry). The detector flags >= `hint_share` on the first `head_insns` instructions
    (from perf annotate) or, without a disassembly, on the first `head_bytes` bytes.
    """
    rows: list[tuple[int, str, float]] = []
    # perf annotate -s matches perf's own spelling: demangled without the parameter list.
    names = demangle(func.raw_names)
    candidates = sorted(func.raw_names, key=len) + sorted({strip_params(names[n]) for n in func.raw_names})
    for raw in candidates:
        rows = parse_annotate(recorder.perf_annotate(perf_data, raw))
        if rows:
            break
    if rows:
        head = sum(s for _, _, s in rows[:head_insns])
        desc = f"first {head_insns} instructions"
    else:
        head = head_share(func, head_bytes)
        desc = f"first {head_bytes} bytes"
    return Annotation(
        symbol=func.key, dso=func.dso_name, samples=func.samples, instructions=rows,
        head_share=head, head_desc=desc, front_end_hint=head >= hint_share and func.samples >= 20,
    )


def head_share(func: Function, head_bytes: int = 16) -> float:
    """Share of a function's period on its first `head_bytes` bytes (from sample offsets)."""
    total = sum(func.offsets.values())
    return sum(p for off, p in func.offsets.items() if off < head_bytes) / total if total else 0.0


# --- diff -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class DiffRow:
    symbol: str
    dso: str
    a_samples: float  # mean per recording when profiles hold several recordings
    b_samples: float
    extra: float  # B - A in millions of period units: ms for cpu-clock, Mcycles for cycles
    share_of_extra: float  # (B_f - A_f) / (B_total - A_total)
    ci: dict[str, float] | None = None  # {"low", "high", "level"} of share_of_extra

    def as_dict(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in
                ("symbol", "dso", "a_samples", "b_samples", "extra", "share_of_extra", "ci")}


def diff_profiles(a: Profile, b: Profile) -> list[DiffRow]:
    """Functions behind B's extra period over A, as a share of the extra (seed 001's table)."""
    extra = b.period - a.period
    rows = []
    for key in set(a.functions) | set(b.functions):
        fa, fb = a.functions.get(key), b.functions.get(key)
        d = (fb.period if fb else 0) - (fa.period if fa else 0)
        ref = fb or fa
        assert ref is not None
        rows.append(DiffRow(
            symbol=key, dso=ref.dso_name, a_samples=fa.samples if fa else 0,
            b_samples=fb.samples if fb else 0, extra=d / 1e6,
            share_of_extra=d / extra if extra else 0.0,
        ))
    return sorted(rows, key=lambda r: (-r.share_of_extra, r.symbol))


# --- profiles kept with the stored run, merged and averaged ---------------------------------

KEEP_FUNCTIONS = 400  # per recording: the rest is folded into one "[other]" row
_FAR = 1 << 30  # offset bucket standing for "past the function's head" in a stored profile


def profile_to_dict(p: Profile, keep: int = KEEP_FUNCTIONS, head_bytes: int = 16) -> dict[str, Any]:
    """A recording's profile in the JSON kept with its stored run (analysis needs no perf.data)."""
    funcs = sorted(p.functions.values(), key=lambda f: (-f.period, f.key))
    rows = [{"key": f.key, "dso": f.dso, "samples": f.samples, "period": f.period,
             "head": sum(v for o, v in f.offsets.items() if o < head_bytes),
             "offsets": sum(f.offsets.values()), "raw": sorted(f.raw_names)[:3]} for f in funcs[:keep]]
    rest = funcs[keep:]
    if rest:
        rows.append({"key": "[other]", "dso": "", "samples": sum(f.samples for f in rest),
                     "period": sum(f.period for f in rest), "head": 0, "offsets": 0, "raw": []})
    return {"samples": p.samples, "period": p.period, "first_ns": p.first_ns, "last_ns": p.last_ns,
            "functions": rows}


def profile_from_dict(d: dict[str, Any]) -> Profile:
    funcs = {}
    for r in d.get("functions") or []:
        # Two offset buckets keep what the head-share detector needs: head vs the rest.
        offsets = Counter({0: r["head"], _FAR: r["offsets"] - r["head"]})
        funcs[r["key"]] = Function(key=r["key"], dso=r["dso"], samples=r["samples"],
                                   period=r["period"], raw_names=set(r.get("raw") or ()),
                                   offsets=+offsets)
    return Profile(d.get("samples", 0), d.get("period", 0), funcs, d.get("first_ns"), d.get("last_ns"))


def merge(profiles: Sequence[Profile]) -> Profile:
    """Sum several recordings of the same window into one profile."""
    funcs: dict[str, Function] = {}
    for p in profiles:
        for k, f in p.functions.items():
            g = funcs.setdefault(k, Function(key=k, dso=f.dso, offsets=Counter()))
            g.samples += f.samples
            g.period += f.period
            g.raw_names |= f.raw_names
            g.offsets.update(f.offsets)
    return Profile(sum(p.samples for p in profiles), sum(p.period for p in profiles), funcs)


def mean_profile(profiles: Sequence[Profile]) -> Profile:
    """The per-recording mean (period and samples divided by K), for unequal K."""
    m = merge(profiles)
    k = len(profiles)
    for f in m.functions.values():
        f.period = f.period / k  # type: ignore[assignment]  # int fields hold the mean, a float
        f.samples = f.samples / k  # type: ignore[assignment]  # as above
    return Profile(m.samples / k, m.period / k, m.functions)  # type: ignore[arg-type]  # as above


def unknown_share(p: Profile) -> float:
    """Share of the period whose samples perf could not name ("[unknown]")."""
    unk = sum(f.period for k, f in p.functions.items() if k.startswith("[unknown]"))
    return unk / p.period if p.period else 0.0
