"""What do single operations cost per ABI? (seeds 000, 002, 003)

One C driver (perflab/kernels/micro/micro.c) holds every benchmark; it is built once per ABI
(-m64, -m32, -mx32 where this kernel runs it) through the build cache and prints ns per
operation over a timed loop. Each (benchmark, ABI) pair runs once per round, in an order
shuffled anew each round, so drift spreads over all pairs. Per pair: the median ns/op with a
bootstrap CI over the rounds; per benchmark: every other ABI against -m64 as the ratio of
medians with its bootstrap CI, shown as a percentage difference (seed 002's figure), with a
Mann-Whitney p-value, Holm-corrected over the benchmarks, and Cliff's delta.
Cycles per op are added where hardware counters exist (perf stat, whole process).
"""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from perflab.errors import PerflabError
from perflab.model import MetricPattern, RunSpec
from perflab.platform.sysfs import Root

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
    "malloc_small": (20_000, "malloc+touch+free of 64 KiB (below the 128 KiB mmap threshold)"),
    "malloc_large": (10_000, "malloc+touch+free of 1 MiB (above the mmap threshold)"),
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
    MetricPattern(r"minflt_per_op=(?P<minflt_per_op>[0-9.]+) mmap_blocks_per_batch=(?P<mmap_blocks>\d+) "
                  r"brk_growth_bytes=(?P<brk_growth_bytes>-?\d+) batch=(?P<batch>\d+)"),
    MetricPattern(r"total_bytes=(?P<shm_total_bytes>\d+) touched_bytes=(?P<shm_touched_bytes>\d+)"),
)


@dataclass(frozen=True)
class MicroConfig:
    benches: tuple[str, ...] = DEFAULT_BENCHES
    abis: tuple[str, ...] = ABIS
    reps: int = 10  # rounds; each runs every (bench, ABI) once, shuffled
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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Cell:
    bench: str
    abi: str
    n: int
    median_ns: float
    lo_ns: float
    hi_ns: float
    ops_per_s: float
    cycles_per_op: float | None = None
    extra: dict[str, float] = field(default_factory=dict)  # medians of malloc/shm metrics


@dataclass
class AbiDiff:
    bench: str
    abi: str  # compared against base
    base: str
    pct: float  # (median abi / median base - 1) * 100: positive = slower than base
    lo_pct: float
    hi_pct: float
    p_value: float
    p_adjusted: float | None = None
    effect_size: float = 0.0  # Cliff's delta
    significant: bool = False


@dataclass
class MicroResult:
    campaign_id: int | None
    abis: list[str]
    skipped: dict[str, str]  # ABI or bench -> one-line reason
    cells: list[Cell] = field(default_factory=list)
    diffs: list[AbiDiff] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def source() -> Path:
    return Path(__file__).resolve().parents[1] / "kernels" / "micro" / "micro.c"


def build_micro(abi: str):
    from perflab.kernels.build import build

    return build([source()], f"micro_{abi}", compiler="gcc", cflags=("-O2", f"-{abi}"), ldflags=("-lm",))


def usable_abis(wanted: tuple[str, ...]) -> tuple[list[str], dict[str, str]]:
    """The ABIs this machine builds and runs, and one line for each it cannot."""
    from perflab.platform import probes

    ok, skipped = [], {}
    for abi in wanted:
        if abi == "m64":
            ok.append(abi)
            continue
        probe = probes.x32_runnable() if abi == "mx32" else probes.m32_buildable()
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


def run_micro(config: MicroConfig, executor, store, console=None) -> MicroResult:
    """Build per ABI, run shuffled rounds of every (bench, ABI), summarise and compare ABIs."""
    from perflab.platform import probes

    started = time.monotonic()
    say = (lambda msg: console.print(msg, highlight=False)) if console is not None else (lambda msg: None)
    abis, skipped = usable_abis(config.abis)
    for abi, why in skipped.items():
        say(f"{abi}: {why}; skipped")
    if not abis:
        raise PerflabError("no requested ABI runs here: add --abi m64")
    benches = [b for b in config.benches if b != "shm"]
    # naming shm among the benchmarks asks for it as --shm on does
    shm_mode = "on" if "shm" in config.benches else config.shm
    run_shm, shm_total, why = shm_plan(config, shm_mode)
    say(why)
    if run_shm:
        benches.append("shm")
    elif shm_mode != "off":
        skipped["shm"] = why
    if not benches:
        raise PerflabError("no benchmark left to run: choose --bench names or --shm on")
    binaries = {abi: build_micro(abi).path for abi in abis}
    counters = probes.hw_counters()
    events = ("cycles",) if counters.available else None
    result = MicroResult(None, abis, skipped)
    if not counters.available:
        result.notes.append(f"cycles per op: {counters.reason}; ns per op only")

    campaign = store.start_campaign("micro", config.as_dict(), host_id=_add_host(store))
    result.campaign_id = campaign
    samples: dict[tuple[str, str], list] = {}
    rng = random.Random(config.seed)
    try:
        for rep in range(config.reps):
            order = [(b, a) for b in benches for a in abis if not (b == "shm" and rep >= 2)]
            rng.shuffle(order)
            for bench, abi in order:
                argv = [str(binaries[abi]), "--bench", bench, "--iters", str(config.iters(bench)),
                        "--dir", config.io_dir]
                if bench == "shm":
                    argv += ["--total", str(shm_total), "--size", str(min(SHM_SEGMENT, shm_total))]
                spec = RunSpec(argv=tuple(argv), metrics=_METRICS, perf_events=events,
                               timeout=config.timeout, label=f"{bench} {abi}")
                res = executor.run(spec)
                store.add_measurement(campaign, res, {"bench": bench, "abi": abi}, rep=rep,
                                      label=f"{bench}-{abi}")
                if not res.ok or "ns_per_op" not in res.metrics:
                    tail = (res.stderr_tail or res.stdout_tail).strip().splitlines()
                    raise PerflabError(f"micro benchmark {bench} ({abi}) failed: "
                                       f"{tail[-1] if tail else 'exit ' + str(res.exit_code)}")
                samples.setdefault((bench, abi), []).append(res)
            say(f"round {rep + 1}/{config.reps} done")
        result.cells, result.diffs = analyse(samples, benches, abis)
        if len(abis) > 1:
            from math import comb

            # Mann-Whitney's smallest two-sided p with n vs n samples is 2 / C(2n, n); Holm
            # multiplies it by the number of benchmarks compared
            floor = min(1.0, 2 / comb(2 * config.reps, config.reps) * len(benches))
            if floor >= 0.05:
                result.notes.append(f"with {config.reps} reps no difference can reach p < 0.05 after "
                                    f"Holm's correction over {len(benches)} benchmarks (smallest "
                                    f"possible {floor:.2g}): use --reps 10 for significance marks")
        result.elapsed_s = time.monotonic() - started
        store.finish_campaign(campaign, "done", summary=result.as_dict())
    except KeyboardInterrupt:
        store.finish_campaign(campaign, "interrupted")
        raise
    except BaseException:
        store.finish_campaign(campaign, "failed")
        raise
    return result


def analyse(samples: dict, benches: list[str], abis: list[str]) -> tuple[list[Cell], list[AbiDiff]]:
    """Median ns/op with bootstrap CI per (bench, ABI); each ABI against m64 (or the first)."""
    from perflab.stats import bootstrap_median_ci, compare, holm, median

    cells: list[Cell] = []
    for bench in benches:
        for abi in abis:
            runs = samples.get((bench, abi), [])
            if not runs:
                continue
            ns = [r.metrics["ns_per_op"] for r in runs]
            lo, hi = bootstrap_median_ci(ns) if len(ns) > 1 else (ns[0], ns[0])
            cyc = None
            if all("cycles" in r.counters for r in runs):
                cyc = float(median([r.counters["cycles"] / r.metrics["ops"] for r in runs]))
            extra = {}
            for key in ("minflt_per_op", "mmap_blocks", "brk_growth_bytes", "shm_total_bytes"):
                vals = [r.metrics[key] for r in runs if key in r.metrics]
                if vals:
                    extra[key] = float(median(vals))
            cells.append(Cell(bench, abi, len(ns), float(median(ns)), float(lo), float(hi),
                              float(median([r.metrics["ops_per_s"] for r in runs])), cyc, extra))
    diffs: list[AbiDiff] = []
    base = "m64" if "m64" in abis else abis[0]
    for abi in abis:
        if abi == base:
            continue
        for bench in benches:
            a = [r.metrics["ns_per_op"] for r in samples.get((bench, abi), [])]
            b = [r.metrics["ns_per_op"] for r in samples.get((bench, base), [])]
            if len(a) < 2 or len(b) < 2:
                continue
            c = compare(a, b)
            diffs.append(AbiDiff(bench, abi, base, (c.ratio - 1) * 100, (c.lo - 1) * 100,
                                 (c.hi - 1) * 100, c.p_value, effect_size=c.effect_size))
        mine = [d for d in diffs if d.abi == abi]
        for d, p in zip(mine, holm([d.p_value for d in mine])):
            d.p_adjusted = p
            d.significant = p < 0.05 and (d.lo_pct > 0 or d.hi_pct < 0)
    return cells, diffs


def _add_host(store) -> int | None:
    try:
        from perflab.platform.metadata import collect

        metadata = collect()
    except Exception:  # noqa: BLE001 - metadata is context, never a reason to lose a study
        metadata = {}
    return store.add_host(metadata, None)


def _ns(x: float) -> str:
    if x >= 1e6:
        return f"{x / 1e6:.3g} ms"
    if x >= 1e3:
        return f"{x / 1e3:.3g} µs"
    return f"{x:.3g} ns"


def render(result: MicroResult, console) -> None:
    from rich.table import Table

    table = Table(title="perflab micro: time per operation, median [95% CI]")
    table.add_column("operation")
    for abi in result.abis:
        table.add_column(f"-{abi}", justify="right")
    base = "m64" if "m64" in result.abis else result.abis[0]
    others = [a for a in result.abis if a != base]
    for abi in others:
        table.add_column(f"-{abi} vs -{base}", justify="right")
    cells = {(c.bench, c.abi): c for c in result.cells}
    diffs = {(d.bench, d.abi): d for d in result.diffs}
    for bench in dict.fromkeys(c.bench for c in result.cells):
        row = [bench]
        for abi in result.abis:
            c = cells.get((bench, abi))
            if c is None:
                row.append("-")
                continue
            text = f"{_ns(c.median_ns)} [{_ns(c.lo_ns)}, {_ns(c.hi_ns)}]"
            if c.cycles_per_op is not None:
                text += f" {c.cycles_per_op:.1f} cyc"
            row.append(text)
        for abi in others:
            d = diffs.get((bench, abi))
            row.append("-" if d is None else
                       f"{d.pct:+.1f}% [{d.lo_pct:+.1f}, {d.hi_pct:+.1f}]{' *' if d.significant else ''}")
        table.add_row(*row)
    console.print(table)
    if others:
        console.print(f"+N% = slower than -{base}; * = significant (Mann-Whitney, Holm-corrected "
                      "p < 0.05, CI excludes 0)", highlight=False)
    io = [c for c in result.cells if c.bench in IO_BENCHES]
    if io:
        t = Table(title="file output, one byte per operation (operations per second)")
        t.add_column("method")
        for abi in result.abis:
            t.add_column(f"-{abi} ops/s", justify="right")
        for bench in [b for b in IO_BENCHES if any(c.bench == b for c in io)]:
            t.add_row(bench, *[f"{cells[(bench, a)].ops_per_s:,.0f}" if (bench, a) in cells else "-"
                               for a in result.abis])
        console.print(t)
    mal = [c for c in result.cells if c.bench.startswith("malloc")]
    if mal:
        t = Table(title="malloc below and above the mmap threshold (per malloc+touch+free)")
        for col in ("operation", "ABI", "time", "page faults/op", "mmap'd blocks (of 16 held)", "brk growth"):
            t.add_column(col, justify="right" if col not in ("operation", "ABI") else "left")
        for c in mal:
            t.add_row(c.bench, c.abi, _ns(c.median_ns), f"{c.extra.get('minflt_per_op', 0):.2f}",
                      f"{c.extra.get('mmap_blocks', 0):.0f}", f"{c.extra.get('brk_growth_bytes', 0) / 1024:.0f} KiB")
        console.print(t)
    for c in result.cells:
        if c.bench == "shm":
            console.print(f"shm ({c.abi}): {c.extra.get('shm_total_bytes', 0) / 2**30:.2f} GiB touched through "
                          f"segments attached in turn, {_ns(c.median_ns)} per 4 KiB page", highlight=False)
    for what, why in result.skipped.items():
        console.print(f"skipped {what}: {why}", highlight=False)
    for note in result.notes:
        console.print(f"note: {note}", highlight=False)
    console.print(f"{result.elapsed_s:.1f} s", highlight=False)
