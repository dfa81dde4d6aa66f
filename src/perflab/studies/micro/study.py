"""What do single operations cost per ABI? (seeds 000, 002, 003)

One C driver (perflab/kernels/micro) holds every benchmark; it is built once per ABI (-m64,
-m32, -mx32 where this kernel runs it) and prints ns per operation over a timed loop. Each round
runs every (benchmark, ABI) pair once in an order shuffled anew (seeded: a resumed campaign
replans the same order), so drift spreads over all pairs. Per pair: the median ns/op with its
order-statistic CI (stats.median_ci, with the level it reaches). Per benchmark, each ABI against
-m64: the median of the per-round ratios (both ran in the same round) with its order-statistic
CI, shown as a percentage (seed 002's figure), a Mann-Whitney p-value Holm-corrected over the
benchmarks, and Cliff's delta. Seed 000's malloc threshold is measured per ABI (initial and
dynamic maximum) beside its formula 4*1024*1024*sizeof(long). Cycles per op where the PMU counts.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from math import comb
from pathlib import Path
from typing import Any, Iterable

from perflab.errors import PerflabError
from perflab.kernels.micro import build_micro
from perflab.model import MetricPattern, RunResult, RunSpec
from perflab.kernels import abi as abi_probes
from perflab.platform import probes
from perflab.platform.sysfs import Root
from perflab.stats import CI, cliffs_delta, holm, mann_whitney, median, median_ci
from perflab.studies.base import StudyConfig, StudyResult, decode
from perflab.studies.session import Session

NAME = "micro"
PROGRAM = "micro-{abi}"  # stands for the ABI's built driver in a plan made before the builds
# name -> (iterations per run at scale 1, what one op is)
BENCHES: dict[str, tuple[int, str]] = {
    "getpid": (100_000, "raw getpid system call, syscall(SYS_getpid)"),
    "call": (50_000_000, "non-inlined function call and return"),
    "strcpy": (2_000_000, "strcpy of a 62-byte string"),
    "mul64": (50_000_000, "64-bit multiply-add (uint64_t)"),
    "sin": (1_000_000, "sin() of a double"),
    "log": (5_000_000, "log() of a double"),
    "memcpy": (200_000, "memcpy of 4 KiB"),
    "write": (50_000, "write() of 1 byte to a file (unbuffered)"),
    "fprintf": (10_000_000, "fprintf() of 1 byte (buffered)"),
    "fprintf_fflush": (50_000, "fprintf() + fflush() of 1 byte"),
    "write_osync": (100, "write() of 1 byte, file opened O_SYNC"),
    "malloc_small": (20_000, "malloc+touch+free of 64 KiB from the heap (mmap threshold fixed at 128 KiB)"),
    "malloc_large": (10_000, "malloc+touch+free of 1 MiB by mmap (mmap threshold fixed at 128 KiB)"),
    "shm": (1, "one 4 KiB page written and read through SysV shm segments attached in turn"),
}
DEFAULT_BENCHES = tuple(b for b in BENCHES if b != "shm")
IO_BENCHES = ("write", "fprintf", "fprintf_fflush", "write_osync")
ABIS = ("m64", "m32", "mx32")
SHM_TOTAL = 5 << 30  # more than a 32-bit process can address at once
SHM_SEGMENT = 256 << 20

_METRICS = (
    MetricPattern(r"ns_per_op=(?P<ns_per_op>[0-9.]+) ops_per_s=(?P<ops_per_s>[0-9.]+)"),
    MetricPattern(r"iters=(?P<ops>\d+)"),
)
# What only some kernels print is asked of their runs alone: a regex given to every run counted
# the others as runs it "matched in none of" (a warning the quick lab, which leaves shm out, printed).
_BENCH_METRICS = {
    "malloc": (*_METRICS, MetricPattern(
        r"minflt_per_op=(?P<minflt_per_op>[0-9.]+) mmap_blocks_per_batch=(?P<mmap_blocks>\d+) "
        r"brk_growth_bytes=(?P<brk_growth_bytes>-?\d+) batch=(?P<batch>\d+)")),
    "shm": (*_METRICS, MetricPattern(r"total_bytes=(?P<shm_total_bytes>\d+) touched_bytes=(?P<shm_touched_bytes>\d+)")),
}
_THRESHOLD = (MetricPattern(r"sizeof_long=(?P<sizeof_long>\d+) initial_low=(?P<initial_low>\d+) "
                            r"initial_high=(?P<initial_high>\d+) dynamic_max_low=(?P<dynamic_max_low>\d+) "
                            r"dynamic_max_high=(?P<dynamic_max_high>\d+) formula=(?P<formula>\d+)"),)


@dataclass(frozen=True)
class MicroConfig(StudyConfig):
    benches: tuple[str, ...] = DEFAULT_BENCHES
    abis: tuple[str, ...] = ABIS
    reps: int = 10  # rounds (each runs every pair once): 98 % medians' CIs, Holm can pass at 13 benches
    scale: float = 1.0  # multiplies every benchmark's iteration count
    io_dir: str = "."  # where the I/O benchmarks create their temporary file
    shm: str = "auto"  # "on", "off", or "auto": on when memory is plentiful
    shm_total: int = SHM_TOTAL
    seed: int = 0
    timeout: float | None = 300.0

    def __post_init__(self) -> None:
        bad = [b for b in self.benches if b not in BENCHES]
        if bad or not self.benches:
            raise PerflabError(f"unknown benchmark {bad[0] if bad else '(none)'!r}: choose from "
                               + ", ".join(BENCHES))
        bad = [a for a in self.abis if a not in ABIS]
        if bad or not self.abis:
            raise PerflabError(f"unknown ABI {bad[0] if bad else '(none)'!r}: choose from m64, m32, mx32")
        if self.reps < 1 or self.scale <= 0:
            raise PerflabError("--reps must be at least 1 and --scale above 0")
        if self.shm not in ("on", "off", "auto"):
            raise PerflabError("--shm must be on, off or auto")
        if not Path(self.io_dir).is_dir():
            raise PerflabError(f"--io-dir {self.io_dir!r} is not a directory: give an existing one")

    def iters(self, bench: str) -> int:
        return max(1, round(BENCHES[bench][0] * self.scale))


Config = MicroConfig


@dataclass
class Cell:
    bench: str
    abi: str
    n: int
    median_ns: float | None  # None: every run failed
    ci: CI | None
    ops_per_s: float | None
    cycles_per_op: float | None = None
    extra: dict[str, float] = field(default_factory=dict)  # medians of malloc/shm metrics
    failed: int = 0


@dataclass
class AbiDiff:
    bench: str
    abi: str  # compared against base
    base: str
    pct: float  # (median of per-round abi/base ratios - 1) * 100: positive = slower than base
    ci_pct: CI  # of that percentage (order-statistic CI of the ratios' median, with its level)
    p_value: float  # Mann-Whitney, two-sided
    p_adjusted: float | None = None
    effect_size: float = 0.0  # Cliff's delta
    significant: bool = False


@dataclass
class MicroResult(StudyResult):
    abis: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # ABI or bench -> one-line reason
    cells: list[Cell] = field(default_factory=list)
    diffs: list[AbiDiff] = field(default_factory=list)
    thresholds: dict[str, dict[str, int]] = field(default_factory=dict)  # ABI -> seed 000's probe

    def verdict(self) -> str:
        """How many operations differ between ABIs after Holm, the first six named; without a
        comparison, what was measured on which ABIs (the report's and the listing's sentence)."""
        sig_ = [d for d in self.diffs if d.significant]
        if self.diffs:
            named = "; ".join(f"{d.bench} {d.abi} {d.pct:+.0f} %" for d in sig_[:6])
            more = f"; and {len(sig_) - 6} more" if len(sig_) > 6 else ""
            return (f"{len(sig_)} of {_operations(len(self.diffs))} differ significantly between ABIs"
                    + (f": {named}{more}" if sig_ else "") + ".")
        benches = {c.bench for c in self.cells}
        return f"{_operations(len(benches))} measured on {', '.join(self.abis)}." if self.cells else ""

    @classmethod
    def from_dict(cls, d: dict) -> "MicroResult":
        return decode(cls, d)


def _operations(n: int) -> str:
    return "1 operation" if n == 1 else f"{n:,} operations"


def usable_abis(wanted: tuple[str, ...]) -> tuple[list[str], dict[str, str]]:
    """The ABIs this machine builds and runs, and one line for each it cannot."""
    ok, skipped = [], {}
    for abi in wanted:
        if abi == "m64":
            ok.append(abi)
            continue
        probe = abi_probes.x32_runnable() if abi == "mx32" else abi_probes.m32_buildable()
        if probe.available and "cannot run" not in probe.reason:
            ok.append(abi)
        elif abi == "mx32" and "kernel" in probe.reason:
            skipped[abi] = f"not supported by this kernel ({probe.reason})"
        else:
            skipped[abi] = probe.reason
    return ok, skipped


def mem_available(root: Root = Root("/")) -> int | None:
    for line in (root.read("proc/meminfo") or "").splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return None


def shm_plan(config: MicroConfig, mode: str, root: Root = Root("/")) -> tuple[bool, int, str]:
    """(run it?, total bytes, one line why) for the shm benchmark."""
    avail = mem_available(root)
    if mode == "off":
        return False, 0, "shm beyond 4 GiB: off (--shm on to run it)"
    if mode == "auto":
        # plentiful: the 5 GiB touched stays under a third of what is available
        if avail is None or avail < 3 * config.shm_total:
            have = f"{avail / 2**30:.1f} GiB available" if avail else "MemAvailable unknown"
            return False, 0, (f"shm beyond 4 GiB: off by default, memory is short ({have}, want "
                              f"{3 * config.shm_total / 2**30:.0f} GiB); --shm on to run it anyway")
    total = config.shm_total
    if avail is not None and total > avail // 2:
        total = max(SHM_SEGMENT, (avail // 2) // SHM_SEGMENT * SHM_SEGMENT)
        return True, total, (f"shm: scaled to {total / 2**30:.2f} GiB (half of the memory available); "
                             "below 4 GiB this no longer shows a 32-bit process beyond its address space")
    return True, total, f"shm: {total / 2**30:.2f} GiB through {SHM_SEGMENT >> 20} MiB segments"


def plan(config: MicroConfig, machine: Any, abis: list[str] | None = None,
         benches: list[str] | None = None, shm_total: int = 0, cycles: bool = False,
         paths: dict[str, str] | None = None) -> list[RunSpec]:
    """Every (round, bench, ABI) run, each round shuffled by a generator seeded from config."""
    abis = list(config.abis if abis is None else abis)
    benches = [b for b in config.benches if b != "shm"] if benches is None else benches
    rng = random.Random(config.seed)
    specs = []
    for rnd in range(config.reps):
        # shm touches gigabytes: two rounds show its cost without paging the machine for minutes
        order = [(b, a) for b in benches for a in abis if not (b == "shm" and rnd >= 2)]
        rng.shuffle(order)
        for bench, abi in order:
            argv = [(paths or {}).get(abi, PROGRAM.format(abi=abi)), "--bench", bench, "--iters", str(config.iters(bench)),
                    "--dir", config.io_dir]
            if bench == "shm":
                argv += ["--total", str(shm_total), "--size", str(min(SHM_SEGMENT, shm_total))]
            metrics = _BENCH_METRICS.get(bench.split("_")[0], _METRICS)
            specs.append(RunSpec(argv=tuple(argv), metrics=metrics, timeout=config.timeout,
                                 perf_events=("cycles",) if cycles else None, label=f"{bench} {abi}",
                                 params={"bench": bench, "abi": abi, "round": rnd}))
    return specs


def execute(config: MicroConfig, session: Session, machine: Any) -> MicroResult:
    """Build per ABI, probe the malloc threshold, run the plan through the session, analyse."""
    abis, skipped = usable_abis(config.abis)
    if not abis:
        raise PerflabError("no requested ABI runs here: add --abi m64")
    benches = [b for b in config.benches if b != "shm"]
    # naming shm among the benchmarks asks for it as --shm on does
    shm_mode = "on" if "shm" in config.benches else config.shm
    run_shm, shm_total, why = shm_plan(config, shm_mode)
    if run_shm:
        benches.append("shm")
    elif shm_mode != "off":
        skipped["shm"] = why
    if not benches:
        raise PerflabError("no benchmark left to run: choose --bench names or --shm on")
    paths = {abi: str(build_micro(abi).path) for abi in abis}
    pmu = (machine.metadata or {}).get("probes", {}).get("hw_counters") or {
        "available": probes.hw_counters().available, "reason": probes.hw_counters().reason}
    notes = [] if pmu["available"] else [f"cycles per op: {pmu['reason']}; ns per op only"]
    if run_shm:
        notes.append(why)
    runs: list[tuple[dict, RunResult]] = []
    for abi in abis:
        spec = RunSpec(argv=(paths[abi], "--bench", "mmap_threshold", "--iters", "1"), metrics=_THRESHOLD,
                       timeout=60, label=f"mmap_threshold {abi}", params={"probe": "mmap_threshold", "abi": abi})
        runs.append((dict(spec.params), session.run(spec)))
    specs = plan(config, machine, abis, benches, shm_total, bool(pmu["available"]), paths)
    for i, spec in enumerate(specs):
        runs.append((dict(spec.params), session.run(spec, rep=spec.params["round"])))
        if (i + 1) % max(1, len(specs) // config.reps) == 0:
            session.say(f"{i + 1}/{len(specs)} runs")
    result = analyse(config, runs, abis)
    result.skipped.update(skipped)
    result.notes = notes + result.notes
    return result


def analyse(config: MicroConfig, runs: Iterable[tuple[dict, RunResult]],
            abis: list[str] | None = None) -> MicroResult:
    """Cells per (bench, ABI), paired ABI ratios against m64 with Holm, thresholds (pure)."""
    abis = list(abis or config.abis)
    result = MicroResult(abis=abis)
    ok: dict[tuple[str, str], dict[int, RunResult]] = {}
    failed: dict[tuple[str, str], int] = {}
    for params, res in runs:
        if params.get("probe") == "mmap_threshold":
            if res.ok and "formula" in res.metrics:
                result.thresholds[params["abi"]] = {k: int(v) for k, v in res.metrics.items()}
            continue
        result.runs += 1
        key = (params["bench"], params["abi"])
        if not res.ok or "ns_per_op" not in res.metrics:
            why = res.failure or "no ns_per_op in the output"
            result.failures[why] = result.failures.get(why, 0) + 1
            failed[key] = failed.get(key, 0) + 1
        else:
            ok.setdefault(key, {})[params.get("round", 0)] = res
    benches = list(dict.fromkeys(b for b, _ in list(ok) + list(failed)))
    for bench in benches:
        for abi in abis:
            got = list(ok.get((bench, abi), {}).values())
            if not got and (bench, abi) not in failed:
                continue
            result.cells.append(_cell(bench, abi, got, failed.get((bench, abi), 0)))
    base = "m64" if "m64" in abis else abis[0]
    for abi in [a for a in abis if a != base]:
        mine = []
        for bench in benches:
            a, b = ok.get((bench, abi), {}), ok.get((bench, base), {})
            pairs = [a[k].metrics["ns_per_op"] / b[k].metrics["ns_per_op"] for k in sorted(set(a) & set(b))]
            if len(a) < 2 or len(b) < 2 or len(pairs) < 2:
                continue
            xa = [r.metrics["ns_per_op"] for r in a.values()]
            xb = [r.metrics["ns_per_op"] for r in b.values()]
            ci = median_ci(pairs)
            mine.append(AbiDiff(bench, abi, base, (median(pairs) - 1) * 100,
                                CI((ci.low - 1) * 100, (ci.high - 1) * 100, ci.level),
                                mann_whitney(xa, xb)[1], effect_size=cliffs_delta(xa, xb)))
        for d, p in zip(mine, holm([d.p_value for d in mine])):
            d.p_adjusted = p
            d.significant = p < 0.05 and not d.ci_pct.contains(0.0)
        result.diffs += mine
    if len(abis) > 1 and benches:
        # Mann-Whitney's smallest two-sided p with n vs n samples is 2 / C(2n, n); Holm
        # multiplies it by the number of benchmarks compared
        floor = min(1.0, 2 / comb(2 * config.reps, config.reps) * len(benches))
        if floor >= 0.05:
            result.notes.append(f"with {config.reps} reps no difference can reach p < 0.05 after Holm's "
                                f"correction over {len(benches)} benchmarks (smallest possible {floor:.2g}): "
                                "use --reps 10 for significance marks")
    levels = [c.ci.level for c in result.cells if c.ci is not None and c.n > 1]
    if levels and min(levels) < 0.90:
        result.notes.append(f"with {config.reps} rounds a median's interval reaches only {min(levels):.0%} "
                            "confidence: use --reps 5 or more for 90 %")
    return result


def _cell(bench: str, abi: str, runs: list[RunResult], failed: int) -> Cell:
    if not runs:
        return Cell(bench, abi, 0, None, None, None, failed=failed)
    ns = [r.metrics["ns_per_op"] for r in runs]
    cyc = None
    if all("cycles" in r.counters for r in runs):
        cyc = float(median([r.counters["cycles"] / r.metrics["ops"] for r in runs]))
    extra = {}
    for key in ("minflt_per_op", "mmap_blocks", "brk_growth_bytes", "shm_total_bytes"):
        vals = [r.metrics[key] for r in runs if key in r.metrics]
        if vals:
            extra[key] = float(median(vals))
    return Cell(bench, abi, len(ns), float(median(ns)), median_ci(ns),
                float(median([r.metrics["ops_per_s"] for r in runs])), cyc, extra, failed)
