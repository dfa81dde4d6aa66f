"""Is the front end (i-cache, iTLB) the bottleneck, and do 2 MiB text pages cure it? (seed 001)

A generated program (perflab.kernels.frontend.generate) dispatches pseudo-random opcodes mod n
over n blocks of real work; its hot code grows linearly with n. One binary holds the largest
size, so every point of the scan and both page modes run the very same bytes. The scan runs
every (size, page mode) pair once per round, in an order shuffled anew each round, so machine
drift spreads over the whole curve. Per point: the median ns per dispatch with a bootstrap CI;
per size: the ratio 4 KiB / 2 MiB pages with its CI. The knee of runtime against log2(code
size) comes from perflab.stats.knee (two-segment fit against one line, BIC) and is set beside
this CPU's iTLB reach (entries x page size, from cpuid) and its L1i and L2 sizes (topology).

2 MiB text pages: the program remaps its own text onto anonymous transparent huge pages at
start (needs THP "madvise" or "always", no reserved hugetlbfs pages, no mount), and reports
the AnonHugePages of its text mapping from /proc/self/smaps, so every 2 MiB run is verified.
"""

from __future__ import annotations

import math
import random
import re
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from perflab.errors import PerflabError
from perflab.model import MetricPattern, RunSpec
from perflab.platform.sysfs import Root

MODES = ("4k", "2m")
_THP = "/sys/kernel/mm/transparent_hugepage/enabled"
_METRICS = (
    MetricPattern(r"seconds=(?P<seconds>[0-9.]+) ns_per_iter=(?P<ns_per_iter>[0-9.]+) "
                  r"huge_text_kb=(?P<huge_text_kb>-?\d+)"),
)


@dataclass(frozen=True)
class FrontendConfig:
    kind: str = "switch"  # "switch" (seed's generator B) or "calls" (generator A)
    min_bytes: int = 16 << 10
    max_bytes: int = 4 << 20
    points_per_octave: int = 2  # geometric steps: 2 -> factor sqrt(2) between sizes
    iters: int = 2_000_000  # dispatches per run (the same at every size)
    reps: int = 3  # rounds; each round runs every (size, mode) once, shuffled
    modes: tuple[str, ...] = MODES
    block_bytes: int = 64  # bytes of work per case
    per_cpu: tuple[int, ...] | None = None  # pin the scan to each of these CPUs in turn
    perf_span: bool = True  # sample instruction addresses (perf record) once per size
    allow_system_changes: bool = False  # may switch THP from "never" to "madvise" (restored)
    seed: int = 0
    timeout: float | None = 120.0

    def __post_init__(self) -> None:
        if self.kind not in ("switch", "calls"):
            raise PerflabError(f"--kind {self.kind!r} is unknown: use switch or calls")
        if not 1024 <= self.min_bytes < self.max_bytes:
            raise PerflabError("the size range is empty: give --min-size below --max-size (and >= 1K)")
        if self.max_bytes > 64 << 20:
            raise PerflabError("--max-size above 64M would take minutes to build: choose at most 64M")
        bad = [m for m in self.modes if m not in MODES]
        if bad or not self.modes:
            raise PerflabError(f"page mode {bad[0] if bad else ''!r} is unknown: use 4k and/or 2m")
        if self.reps < 1 or self.iters < 1 or self.points_per_octave < 1:
            raise PerflabError("--reps, --iters and --points-per-octave must be at least 1")
        if self.block_bytes < 17:
            raise PerflabError("--block-bytes must be at least 17 (one imul/xor/rol unit)")

    def sizes(self) -> list[int]:
        """Geometric steps from min_bytes to max_bytes (both included)."""
        octaves = math.log2(self.max_bytes / self.min_bytes)
        steps = max(1, round(octaves * self.points_per_octave))
        return sorted({round(self.min_bytes * (self.max_bytes / self.min_bytes) ** (i / steps))
                       for i in range(steps + 1)})

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Point:
    cpu: int | None
    mode: str
    bytes: int  # hot code size from the binary's symbol table
    n: int
    reps: int
    median_ns: float  # per dispatch
    lo_ns: float
    hi_ns: float
    span_bytes: int | None = None  # hot code span from sampled instruction addresses (perf)
    huge_kb: int | None = None  # text on huge pages as the process saw it (2m mode)


@dataclass
class PageRatio:
    cpu: int | None
    bytes: int
    ratio: float  # median 4k / median 2m
    lo: float
    hi: float


@dataclass
class KneeReport:
    cpu: int | None
    mode: str
    knee_bytes: int | None  # None: no knee in range
    slope_before: float | None = None  # ns per doubling of code size
    slope_after: float | None = None
    score: float | None = None
    nearest: str | None = None  # the reference size closest to the knee (within a factor 2)


@dataclass
class FrontendResult:
    campaign_id: int | None
    kind: str
    binary: str
    code_bytes: int
    huge_method: str | None  # how 2 MiB text pages were obtained, or None
    huge_reason: str  # one line: the method, or why 2 MiB mode could not run
    references: dict[str, int]  # name -> bytes (iTLB reach, L1i, L2)
    tlb: list[dict]
    points: list[Point] = field(default_factory=list)
    ratios: list[PageRatio] = field(default_factory=list)
    knees: list[KneeReport] = field(default_factory=list)
    verdict: str = ""
    notes: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- machine facts ------------------------------------------------------------------------------
def read_tlb() -> list[dict]:
    """This CPU's TLBs from cpuid (a tiny C program built through the build cache)."""
    from perflab.kernels.build import build

    src = Path(__file__).resolve().parents[1] / "kernels" / "frontend" / "cpuid_tlb.c"
    res = build([src], "cpuid_tlb", compiler="gcc", cflags=("-O2",))
    out = subprocess.run([str(res.path)], capture_output=True, text=True, check=False, timeout=30)
    return parse_tlb(out.stdout)


def parse_tlb(text: str) -> list[dict]:
    tlbs = []
    for line in text.splitlines():
        if line.startswith("tlb "):
            kv = dict(tok.split("=", 1) for tok in line[4:].split(" source=")[0].split())
            tlbs.append({"level": int(kv["level"]), "type": kv["type"], "page": kv["page"],
                         "entries": int(kv["entries"]), "source": line.split("source=", 1)[1]})
    return tlbs


_PAGE = {"4K": 4 << 10, "2M": 2 << 20, "4M": 4 << 20, "1G": 1 << 30}


def references(tlbs: list[dict], topology) -> dict[str, int]:
    """Sizes a front-end knee may sit at: iTLB reach per level and page size, L1i, L2."""
    refs: dict[str, int] = {}
    for t in tlbs:
        if t["type"] in ("instruction", "unified") and t["page"] in ("4K", "2M"):
            name = f"L{t['level']} {'i' if t['type'] == 'instruction' else 'unified '}TLB reach " \
                   f"{t['page']} ({t['entries']} x {t['page']})"
            refs[name] = t["entries"] * _PAGE[t["page"]]
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


def verdict(knees: list["KneeReport"], ratios: list["PageRatio"]) -> str:
    """One line: does the knee move or vanish with 2 MiB text pages?"""
    k4 = [k for k in knees if k.mode == "4k"]
    k2 = {k.cpu: k for k in knees if k.mode == "2m"}
    if not k4 or not any(k.knee_bytes for k in k4):
        return ("no single knee with 4 KiB pages in this range: runtime grows smoothly with code size "
                "or the scan is too noisy to place a bend (more --reps)")
    if not k2:
        return "knee with 4 KiB pages; 2 MiB text pages were not measured"
    cured = [r for r in ratios if r.lo > 1.0]
    same = all(k2.get(k.cpu) and k2[k.cpu].knee_bytes and k.knee_bytes
               and abs(math.log2(k2[k.cpu].knee_bytes / k.knee_bytes)) <= 0.5 for k in k4 if k.knee_bytes)
    if cured:
        return (f"2 MiB text pages run faster at {len(cured)} size(s) (4K/2M CI above 1): "
                "iTLB misses cost time here")
    if same:
        return ("the knee is the same with 2 MiB text pages and no size runs faster with them: "
                "instruction caches, not the iTLB, set the slowdown here")
    # a knee that moves while no size differs is within the noise of the fit, not an iTLB effect
    return ("no size runs significantly faster with 2 MiB text pages (the knee positions differ "
            "between modes, within the scan's noise): no sign that the iTLB matters here")


# --- 2 MiB text pages ---------------------------------------------------------------------------
def thp_mode(root: Root = Root("/")) -> str | None:
    text = root.read(_THP)
    m = re.search(r"\[(\w+)\]", text or "")
    return m.group(1) if m else None


class _ThpChange:
    """Switch THP from never to madvise for the scan when allowed, and restore it afterwards."""

    def __init__(self, allowed: bool, root: Root = Root("/")) -> None:
        self.allowed, self.root, self.old = allowed, root, None

    def __enter__(self) -> str | None:
        mode = thp_mode(self.root)
        if mode == "never" and self.allowed:
            with open(self.root.join(_THP), "w") as fh:
                fh.write("madvise")
            self.old = mode
            return "THP switched from never to madvise for this scan (restored afterwards)"
        return None

    def __exit__(self, *exc) -> None:
        if self.old is not None:
            with open(self.root.join(_THP), "w") as fh:
                fh.write(self.old)


def probe_huge_text(binary: Path, executor) -> tuple[str | None, str]:
    """Does remapping text onto THP work here? (method or None, one-line reason)."""
    mode = thp_mode()
    if mode is None:
        return None, "2 MiB text pages: this kernel has no transparent huge pages (no " + _THP + ")"
    if mode == "never":
        return None, ("2 MiB text pages: THP is 'never' here; rerun with --allow-system-changes "
                      "to switch it to madvise for the scan")
    res = executor.run(RunSpec(argv=(str(binary), "1", "1", "--huge"), metrics=_METRICS, timeout=60,
                               label="probe-huge"))
    kb = res.metrics.get("huge_text_kb")
    if not res.ok or not kb or kb <= 0:
        why = (res.stderr_tail or res.stdout_tail).strip().splitlines()
        return None, ("2 MiB text pages: remapping text onto THP failed ("
                      + (why[-1] if why else f"AnonHugePages {kb}") + ")")
    return "thp-remap", (f"2 MiB text pages: text remapped onto anonymous THP at start (madvise + "
                         f"mremap; THP mode '{mode}'), verified in /proc/self/smaps: "
                         f"AnonHugePages {int(kb)} kB")


# --- perf-sampled code span ---------------------------------------------------------------------
def sampled_span(binary: Path, n: int, iters: int, lo: int, hi: int) -> int | None:
    """Max - min sampled instruction address inside [lo, hi) (the seed's sampled rip), or None."""
    with tempfile.TemporaryDirectory(prefix="perflab-frontend-") as tmp:
        data = Path(tmp) / "perf.data"
        rec = subprocess.run(
            ["perf", "record", "-q", "-e", "cpu-clock", "-F", "20000", "-o", str(data), "--",
             str(binary), str(n), str(iters)],
            capture_output=True, text=True, check=False, timeout=120)
        if rec.returncode != 0:
            return None
        out = subprocess.run(["perf", "script", "-i", str(data), "-F", "ip"],
                             capture_output=True, text=True, check=False, timeout=120)
    ips = [int(tok, 16) for tok in out.stdout.split() if re.fullmatch(r"[0-9a-f]+", tok)]
    inside = [ip for ip in ips if lo <= ip < hi]
    if len(inside) < 2:
        return None
    return max(inside) - min(inside)


# --- analysis (pure) ----------------------------------------------------------------------------
def find_knee(sizes: list[int], ns: list[float]) -> tuple[int, float, float, float] | None:
    """Knee of runtime against log2(code size) via perflab.stats.knee: (bytes, slopes, score).

    The x axis is log2(bytes) because the scan is geometric: on a linear axis most points would
    crowd the left end and the largest sizes alone would decide the fit.
    """
    from perflab.stats import knee

    k = knee([math.log2(s) for s in sizes], list(ns))
    if k is None:
        return None
    return round(2 ** k.x), k.slope_before, k.slope_after, k.score


def analyse(samples: dict[tuple, list[float]], sizes_n: list[tuple[int, int]], cpus: list[int | None],
            modes: tuple[str, ...], refs: dict[str, int], spans: dict[tuple, int],
            huge_kb: dict[tuple, int]) -> tuple[list[Point], list[PageRatio], list[KneeReport]]:
    """Medians with CIs per point, 4k/2m ratios per size, a knee per (cpu, mode)."""
    from perflab.stats import bootstrap_median_ci, median, ratio_of_medians

    points, ratios, knees = [], [], []
    for cpu in cpus:
        for mode in modes:
            xs, ys = [], []
            for b, n in sizes_n:
                vals = samples.get((cpu, mode, b), [])
                if not vals:
                    continue
                lo, hi = bootstrap_median_ci(vals) if len(vals) > 1 else (vals[0], vals[0])
                med = float(median(vals))
                points.append(Point(cpu, mode, b, n, len(vals), med, float(lo), float(hi),
                                    spans.get((cpu, b)) if mode == "4k" else None,
                                    huge_kb.get((cpu, b)) if mode == "2m" else None))
                xs.append(b)
                ys.append(med)
            k = find_knee(xs, ys) if len(xs) >= 2 else None
            if k is None:
                knees.append(KneeReport(cpu, mode, None))
            else:
                knees.append(KneeReport(cpu, mode, k[0], k[1], k[2], k[3], nearest_reference(k[0], refs)))
        if "4k" in modes and "2m" in modes:
            for b, _ in sizes_n:
                a, h = samples.get((cpu, "4k", b), []), samples.get((cpu, "2m", b), [])
                if len(a) >= 2 and len(h) >= 2:
                    r = ratio_of_medians(a, h)
                    ratios.append(PageRatio(cpu, b, r.ratio, r.lo, r.hi))
    return points, ratios, knees


# --- the study ----------------------------------------------------------------------------------
def run_frontend(config: FrontendConfig, executor, store, console=None, topology=None) -> FrontendResult:
    """Build the generator at max size, probe 2 MiB text, scan shuffled rounds, find knees."""
    from perflab.kernels.frontend.generate import build_program, code_layout
    from perflab.platform import probes

    started = time.monotonic()
    say = (lambda msg: console.print(msg, highlight=False)) if console is not None else (lambda msg: None)
    if topology is None:
        from perflab.platform.topology import read_topology

        topology = read_topology()
    cpus: list[int | None] = list(config.per_cpu) if config.per_cpu else [None]
    if config.per_cpu:
        from perflab.measure.executor import check_cpus

        check_cpus(config.per_cpu)
    prog, built = build_program(config.kind, config.max_bytes, config.block_bytes)
    layout = code_layout(built.path, prog)
    per_case = layout.total_bytes / layout.cases
    sizes_n: list[tuple[int, int]] = []
    for size in config.sizes():
        n = min(layout.cases, max(1, round(size / per_case)))
        if all(n != m for _, m in sizes_n):
            sizes_n.append((layout.hot_bytes(n), n))
    try:
        tlbs = read_tlb()
    except Exception as exc:  # noqa: BLE001 - cpuid is context for the verdict, not the measurement
        tlbs = []
        say(f"note: could not read TLB sizes from cpuid ({exc})")
    refs = references(tlbs, topology)
    result = FrontendResult(None, config.kind, str(built.path), layout.total_bytes, None, "", refs, tlbs)
    say(f"{config.kind} program: {layout.cases} cases, {layout.total_bytes} bytes of generated code "
        f"(nm -S), {len(sizes_n)} sizes x {len(config.modes)} page modes x {config.reps} reps")

    modes = tuple(config.modes)
    with _ThpChange(config.allow_system_changes) as change:
        if change:
            result.notes.append(change)
            say(change)
        if "2m" in modes:
            method, reason = probe_huge_text(built.path, executor)
            result.huge_method, result.huge_reason = method, reason
            say(reason)
            if method is None:
                modes = tuple(m for m in modes if m != "2m")
                result.notes.append(reason + "; scanning 4 KiB pages only")
        if not modes:
            raise PerflabError("no page mode can run here: add --modes 4k")

        host_id = _add_host(store, topology)
        campaign = store.start_campaign("frontend", config.as_dict(), host_id=host_id)
        result.campaign_id = campaign
        samples: dict[tuple, list[float]] = {}
        spans: dict[tuple, int] = {}
        huge_kb: dict[tuple, int] = {}
        rng = random.Random(config.seed)
        try:
            for cpu in cpus:
                pin = (cpu,) if cpu is not None else None
                # unrecorded warm-up: page cache, frequency ramp
                executor.run(_spec(built.path, sizes_n[-1][1], config, "4k", pin))
                for rep in range(config.reps):
                    order = [(b, n, m) for b, n in sizes_n for m in modes]
                    rng.shuffle(order)
                    for b, n, mode in order:
                        res = executor.run(_spec(built.path, n, config, mode, pin))
                        params = {"kind": config.kind, "bytes": b, "n": n, "mode": mode, "cpu": cpu}
                        store.add_measurement(campaign, res, params, rep=rep, label=f"{mode}-{b}")
                        if not res.ok or "ns_per_iter" not in res.metrics:
                            tail = (res.stderr_tail or res.stdout_tail).strip().splitlines()
                            raise PerflabError(f"the {config.kind} program failed at n={n} ({mode}): "
                                               f"{tail[-1] if tail else 'exit ' + str(res.exit_code)}")
                        if mode == "2m":
                            kb = int(res.metrics.get("huge_text_kb", 0))
                            huge_kb[(cpu, b)] = min(kb, huge_kb.get((cpu, b), kb))
                            if kb <= 0:
                                raise PerflabError("a 2 MiB-mode run got no huge text pages (THP "
                                                   "fragmentation?): rerun, or scan --modes 4k")
                        samples.setdefault((cpu, mode, b), []).append(res.metrics["ns_per_iter"])
                    if console is not None:
                        say(f"cpu {'any' if cpu is None else cpu}: round {rep + 1}/{config.reps} done")
                if config.perf_span and probes.perf_status().available:
                    for b, n in sizes_n:
                        span = sampled_span(built.path, n, max(200_000, config.iters // 4),
                                            layout.start, layout.end)
                        if span is not None:
                            spans[(cpu, b)] = span + config.block_bytes
            if config.perf_span and not probes.perf_status().available:
                result.notes.append("sampled code span skipped: " + probes.perf_status().reason)
            result.points, result.ratios, result.knees = analyse(
                samples, sizes_n, cpus, modes, refs, spans, huge_kb)
            result.verdict = verdict(result.knees, result.ratios)
            result.elapsed_s = time.monotonic() - started
            store.finish_campaign(campaign, "done", summary=result.as_dict())
        except KeyboardInterrupt:
            store.finish_campaign(campaign, "interrupted")
            raise
        except BaseException:
            store.finish_campaign(campaign, "failed")
            raise
    return result


def _spec(binary: Path, n: int, config: FrontendConfig, mode: str, pin) -> RunSpec:
    argv = [str(binary), str(n), str(config.iters)] + (["--huge"] if mode == "2m" else [])
    return RunSpec(argv=tuple(argv), cpus=pin, metrics=_METRICS, timeout=config.timeout,
                   label=f"frontend {mode} n={n}")


def _add_host(store, topology) -> int | None:
    try:
        from perflab.platform.metadata import collect

        metadata = collect()
    except Exception:  # noqa: BLE001 - metadata is context, never a reason to lose a study
        metadata = {}
    return store.add_host(metadata, asdict(topology) if topology is not None else None)


# --- terminal output ----------------------------------------------------------------------------
def fmt_bytes(b: int | float | None) -> str:
    if b is None:
        return "-"
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= size:
            return f"{b / size:.4g} {unit}"
    return f"{int(b)} B"


def render(result: FrontendResult, console) -> None:
    from rich.table import Table

    cpus = sorted({p.cpu for p in result.points}, key=lambda c: -1 if c is None else c)
    modes = [m for m in MODES if any(p.mode == m for p in result.points)]
    for cpu in cpus:
        title = f"frontend ({result.kind}): ns per dispatch vs hot code size"
        if cpu is not None:
            title += f", CPU {cpu}"
        table = Table(title=title)
        table.add_column("code size", justify="right")
        table.add_column("n", justify="right")
        table.add_column("perf span", justify="right")
        for m in modes:
            table.add_column(f"{m.upper()} pages ns [95% CI]", justify="right")
        if len(modes) == 2:
            table.add_column("4K/2M [95% CI]", justify="right")
        by = {(p.mode, p.bytes): p for p in result.points if p.cpu == cpu}
        rat = {r.bytes: r for r in result.ratios if r.cpu == cpu}
        for b in sorted({p.bytes for p in result.points if p.cpu == cpu}):
            row = [fmt_bytes(b), str(next(p.n for p in result.points if p.cpu == cpu and p.bytes == b))]
            p4 = by.get(("4k", b))
            row.append(fmt_bytes(p4.span_bytes) if p4 and p4.span_bytes else "-")
            for m in modes:
                p = by.get((m, b))
                row.append(f"{p.median_ns:.1f} [{p.lo_ns:.1f}, {p.hi_ns:.1f}]" if p else "-")
            if len(modes) == 2:
                r = rat.get(b)
                row.append(f"{r.ratio:.3f} [{r.lo:.3f}, {r.hi:.3f}]" if r else "-")
            table.add_row(*row)
        console.print(table)
    console.print(result.huge_reason or "2 MiB text pages: not requested", highlight=False)
    for k in result.knees:
        where = "" if k.cpu is None else f"CPU {k.cpu}, "
        if k.knee_bytes is None:
            console.print(f"knee ({where}{k.mode} pages): no knee in range", highlight=False)
        else:
            near = f"; near: {k.nearest}" if k.nearest else "; no reference size within 2x"
            console.print(
                f"knee ({where}{k.mode} pages): {fmt_bytes(k.knee_bytes)} "
                f"(slope {k.slope_before:.2f} -> {k.slope_after:.2f} ns per doubling, "
                f"BIC gain {k.score:.1f}){near}", highlight=False)
    if result.references:
        console.print("references: " + ", ".join(f"{name} = {fmt_bytes(b)}"
                                                  for name, b in result.references.items()),
                      highlight=False)
    if result.verdict:
        console.print(f"verdict: {result.verdict}", highlight=False)
    for note in result.notes:
        console.print(f"note: {note}", highlight=False)
    console.print(f"{result.elapsed_s:.1f} s", highlight=False)


__all__ = ["FrontendConfig", "FrontendResult", "run_frontend", "render", "find_knee"]
