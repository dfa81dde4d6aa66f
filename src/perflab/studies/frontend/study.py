"""Is the front end (i-cache, iTLB) the bottleneck, and do 2 MiB text pages cure it? (seed 001)

A generated program (perflab.kernels.frontend) dispatches pseudo-random opcodes mod n over n
blocks of real work, so its hot code grows linearly with n. One binary holds the largest size:
every size and both page modes run the very same bytes. Each round runs every (size, mode) once
in an order shuffled anew (a seeded shuffle, so a resumed campaign replans the same order).

Per point: the median ns per dispatch with its order-statistic CI (stats.median_ci, with its
achieved level). Per size: the per-round ratios 4K/2M (both modes ran in the same round, so
drift cancels), their median with its order-statistic CI, and a one-sided Wilcoxon signed-rank
test of log(4K/2M) > 0. The verdict corrects across sizes (Holm) and asks for a minimum effect;
hardware counters (iTLB and L1i misses per dispatch), where the PMU has them, say what changed.
The knee of runtime against log2(code size) (stats.knee) is set beside this CPU's iTLB reach and
cache sizes as a description, never as the verdict.

Without a PMU, ``instrument="cachegrind"`` runs the same scan (4 KiB pages only) under Valgrind
and fits the same knee to simulated I1 misses per dispatch (studies/frontend/sim.py).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from perflab.errors import PerflabError
from perflab.kernels.build import cache_root
from perflab.kernels.frontend.facts import ThpChange, read_tlb, references, sampled_span, thp_mode
from perflab.kernels.frontend.generate import build_program, code_layout, per_case_bytes
from perflab.measure import perfstat
from perflab.measure.cachegrind import CachegrindExecutor
from perflab.measure.executor import check_cpus
from perflab.model import MetricPattern, RunResult, RunSpec
from perflab.platform import probes
from perflab.stats import holm, median, median_ci
from perflab.studies.frontend import sim
from perflab.studies.base import StudyConfig
from perflab.studies.frontend.result import Context, FrontendResult, KneeReport, PageRatio, Point
from perflab.studies.frontend.verdict import design_notes, knee_fit, verdict
from perflab.studies.session import Session

NAME = "frontend"
MODES = ("4k", "2m")
PROGRAM = "frontend-program"  # stands for the built binary in a plan made before the build
COUNTER_EVENTS = ("iTLB-load-misses", "L1-icache-load-misses")
_METRICS = (MetricPattern(r"seconds=(?P<seconds>[0-9.]+) ns_per_iter=(?P<ns_per_iter>[0-9.]+) "
                          r"huge_text_kb=(?P<huge_text_kb>-?\d+)"),)


@dataclass(frozen=True)
class FrontendConfig(StudyConfig):
    kind: str = "switch"  # "switch" (seed's generator B) or "calls" (generator A)
    min_bytes: int = 16 << 10
    max_bytes: int = 4 << 20
    points_per_octave: int = 2  # geometric steps: 2 -> factor sqrt(2) between sizes
    iters: int = 2_000_000  # dispatches per run (the same at every size)
    # 10 paired rounds: Holm over the default 17 sizes needs p < 0.05/17, and the smallest
    # one-sided Wilcoxon p is 2^-rounds, so 9 is the fewest that can ever pass; at 10,
    # checks/frontend.py (a 10 % planted penalty, 5 % log-normal noise, drift, bursts) finds the
    # effect in 200 of 200 campaigns with 7 of 200 false alarms; at 8, in none.
    reps: int = 10
    modes: tuple[str, ...] = MODES
    block_bytes: int = 64  # bytes of work per case
    per_cpu: tuple[int, ...] | None = None  # pin the scan to each of these CPUs in turn
    perf_span: bool = True  # sample instruction addresses (perf record) once per size
    counters: bool = True  # iTLB and L1i misses per dispatch where the PMU has them
    allow_system_changes: bool = False  # may switch THP from "never" to "madvise" (restored)
    alpha: float = 0.05  # family-wise error rate of the verdict (Holm across sizes)
    min_effect: float = 0.03  # 2 MiB pages must be at least this much faster to count
    seed: int = 0
    timeout: float | None = 120.0
    instrument: str = ""  # "cachegrind": simulated I1 misses per dispatch instead of time (no PMU needed)
    cache_model: str = ""  # the caches the instrument simulates (platform/cache_model.py)

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
        if not 0 < self.alpha < 1 or not 0 <= self.min_effect < 1:
            raise PerflabError("--alpha must lie in (0, 1) and --min-effect in [0, 1)")
        if self.instrument not in ("", sim.NAME):
            raise PerflabError(f"--instrument {self.instrument!r} is unknown: use time or cachegrind")
        if self.instrument and "2m" in self.modes:
            raise PerflabError("2 MiB text pages are invisible to Valgrind, which models no TLB: "
                               "use --modes 4k with --instrument cachegrind")
        if self.instrument and self.per_cpu:
            raise PerflabError("the simulated I1 is the same on every CPU: drop --per-cpu with "
                               "--instrument cachegrind")
        if self.instrument and not self.cache_model:
            raise PerflabError("--instrument cachegrind needs a cache model (--cache-model, or this "
                               "machine's from sysfs)")

    def sizes(self) -> list[int]:
        """Geometric steps from min_bytes to max_bytes (both included)."""
        octaves = math.log2(self.max_bytes / self.min_bytes)
        steps = max(1, round(octaves * self.points_per_octave))
        return sorted({round(self.min_bytes * (self.max_bytes / self.min_bytes) ** (i / steps))
                       for i in range(steps + 1)})

    def sizes_n(self) -> list[tuple[int, int]]:
        """(hot bytes, n) per size: n cases of per_case_bytes each, distinct n only."""
        per_case = per_case_bytes(self.kind, self.block_bytes)
        cases = max(2, round(self.max_bytes / per_case))
        out: list[tuple[int, int]] = []
        for size in self.sizes():
            n = min(cases, max(1, round(size / per_case)))
            if all(n != m for _, m in out):
                out.append((n * per_case, n))
        return out


Config = FrontendConfig


def plan(config: FrontendConfig, machine: Any, program: str = PROGRAM,
         modes: tuple[str, ...] | None = None, counters: bool = False) -> list[RunSpec]:
    """Every (cpu, round, size, mode) run, each round shuffled by a generator seeded from config."""
    modes = tuple(config.modes if modes is None else modes)
    cpus: list[int | None] = list(config.per_cpu) if config.per_cpu else [None]
    rng = random.Random(config.seed)
    specs = []
    for cpu in cpus:
        for rnd in range(config.reps):
            order = [(b, n, m) for b, n in config.sizes_n() for m in modes]
            rng.shuffle(order)
            for b, n, mode in order:
                argv = (program, str(n), str(config.iters)) + (("--huge",) if mode == "2m" else ())
                specs.append(RunSpec(
                    argv=argv, cpus=(cpu,) if cpu is not None else None, metrics=_METRICS,
                    timeout=config.timeout, perf_events=COUNTER_EVENTS if counters else None,
                    label=f"frontend {mode} n={n}", instrument=config.instrument,
                    params={"kind": config.kind, "bytes": b, "n": n, "mode": mode, "cpu": cpu,
                            "round": rnd, **({"instrument": config.instrument} if config.instrument else {})}))
    return specs


def execute(config: FrontendConfig, session: Session, machine: Any) -> FrontendResult:
    """Build at max size, probe 2 MiB text, run the plan through the session, analyse."""
    if config.per_cpu:
        check_cpus(config.per_cpu)
    if config.instrument:
        return _execute_simulated(config, session, machine)
    prog, built = build_program(config.kind, config.max_bytes, config.block_bytes)
    layout = code_layout(built.path, prog)
    ctx = Context(code_bytes=layout.total_bytes)
    try:
        ctx.tlb = read_tlb()
    except (OSError, PerflabError) as exc:  # cpuid is context for the verdict, not the measurement
        ctx.notes.append(f"could not read TLB sizes from cpuid ({exc})")
    ctx.references = references(ctx.tlb, machine.topology)
    counting = False
    if config.counters:
        pmu = _hw_counters(machine)
        counting = pmu[0]
        ctx.counters_reason = counters_reason(counting, pmu[1])
    modes = tuple(config.modes)
    with ThpChange(config.allow_system_changes) as change:
        if change:
            ctx.notes.append(change)
            session.say(change)
        if "2m" in modes:
            ctx.huge_method, ctx.huge_reason = _probe_huge_text(built.path, session)
            if ctx.huge_method is None:
                modes = tuple(m for m in modes if m != "2m")
        if not modes:
            raise PerflabError("no page mode can run here: add --modes 4k")
        specs = plan(config, machine, str(built.path), modes, counting)
        session.say(f"{config.kind} program: {layout.cases} cases, {layout.total_bytes} bytes of code "
                    f"(nm -S); {len(specs)} runs")
        # unrecorded: page cache, frequency ramp, at the largest size so all of the text is read
        session.warmup(max(specs, key=lambda sp: sp.params["n"]))
        runs = []
        for spec in specs:
            runs.append((dict(spec.params), session.run(spec, rep=spec.params["round"])))
            if len(runs) % max(1, len(specs) // config.reps) == 0:
                session.say(f"{len(runs)}/{len(specs)} runs")
        if config.perf_span and probes.perf_status().available:
            for cpu in (list(config.per_cpu) if config.per_cpu else [None]):
                for _, n in config.sizes_n():
                    _span(config, session, built.path, layout, n, cpu, ctx)
    return analyse(config, runs, ctx)


def _execute_simulated(config: FrontendConfig, session: Session, machine: Any) -> FrontendResult:
    """The scan under the session's Cachegrind executor: 4 KiB pages, no warm-up, no perf."""
    if not isinstance(session.executor, CachegrindExecutor):
        raise PerflabError(f"this frontend campaign runs under --instrument {config.instrument}, which "
                           "perflab resume does not restore: run perflab frontend --instrument "
                           f"{config.instrument} again")
    model = session.executor.model
    prog, built = build_program(config.kind, config.max_bytes, config.block_bytes)
    layout = code_layout(built.path, prog)
    ctx = Context(code_bytes=layout.total_bytes, cache_model_source=model.source, notes=list(model.notes))
    specs = plan(config, machine, str(built.path), ("4k",))
    session.say(f"{config.kind} program: {layout.cases} cases, {layout.total_bytes} bytes of code "
                f"(nm -S); {len(specs)} runs under {config.instrument}, cache model {config.cache_model}")
    # no warm-up: a simulated cache starts cold in every run whatever the machine's state
    runs = []
    for spec in specs:
        runs.append((dict(spec.params), session.run(spec, rep=spec.params["round"])))
        if len(runs) % max(1, len(specs) // config.reps) == 0:
            session.say(f"{len(runs)}/{len(specs)} runs")
    return analyse(config, runs, ctx)


def analyse(config: FrontendConfig, runs: Iterable[tuple[dict, RunResult]],
            ctx: Context | None = None) -> FrontendResult:
    """Points, paired 4K/2M ratios with Holm-corrected tests, knees and the verdict (pure)."""
    ctx = ctx if ctx is not None else Context()
    ok: dict[tuple, list[tuple[int, RunResult]]] = {}
    failed: dict[tuple, int] = {}
    failures: dict[str, int] = {}
    total = 0
    for params, res in runs:
        if "mode" not in params:
            continue
        total += 1
        key = (params.get("cpu"), params["mode"], params["bytes"], params["n"])
        why = _failure(params, res) or (sim.missing(res) if config.instrument else None)
        if why:
            failures[why] = failures.get(why, 0) + 1
            failed[key] = failed.get(key, 0) + 1
        else:
            ok.setdefault(key, []).append((params.get("round", 0), res))
    result = FrontendResult(kind=config.kind, code_bytes=ctx.code_bytes, huge_method=ctx.huge_method,
                            huge_reason=ctx.huge_reason, counters_reason=ctx.counters_reason,
                            references=dict(ctx.references), tlb=list(ctx.tlb), failures=failures,
                            runs=total, notes=list(ctx.notes))
    if config.instrument:
        return sim.analyse(config, ok, failed, result, ctx)
    keys = sorted(set(ok) | set(failed), key=lambda k: (k[0] if k[0] is not None else -1, k[1], k[2]))
    for cpu, mode, b, n in keys:
        got = ok.get((cpu, mode, b, n), [])
        ns = [r.metrics["ns_per_iter"] for _, r in got]
        result.points.append(Point(
            cpu, mode, b, n, len(ns), float(median(ns)) if ns else None,
            median_ci(ns) if ns else None, failed.get((cpu, mode, b, n), 0),
            ctx.spans.get(f"{cpu}:{n}") if mode == "4k" else None,
            min(int(r.metrics.get("huge_text_kb", 0)) for _, r in got) if got and mode == "2m" else None,
            _per_dispatch(got, COUNTER_EVENTS[0], config.iters),
            _per_dispatch(got, COUNTER_EVENTS[1], config.iters)))
    for cpu in dict.fromkeys(k[0] for k in keys):
        for mode in MODES:
            pts = [p for p in result.points if p.cpu == cpu and p.mode == mode and p.median_ns is not None]
            if pts:
                k = knee_fit(pts, result.references)
                result.knees.append(KneeReport(cpu, mode, *k) if k else KneeReport(cpu, mode, None))
        for b, n in config.sizes_n():
            a = {rnd: r.metrics["ns_per_iter"] for rnd, r in ok.get((cpu, "4k", b, n), [])}
            h = {rnd: r.metrics["ns_per_iter"] for rnd, r in ok.get((cpu, "2m", b, n), [])}
            pairs = [a[k] / h[k] for k in sorted(set(a) & set(h)) if h[k] > 0]
            if len(pairs) >= 2:
                result.ratios.append(PageRatio(cpu, b, len(pairs), float(median(pairs)), median_ci(pairs),
                                               signed_rank_greater([math.log(x) for x in pairs])))
    for r, p in zip(result.ratios, holm([r.p_value for r in result.ratios])):
        r.p_adjusted = p
        r.helps = p < config.alpha and r.ratio >= 1 + config.min_effect
    if ctx.counters_reason.startswith("iTLB and L1i misses counted") and not any(
            p.itlb_per_dispatch is not None for p in result.points):
        result.counters_reason = ("perf stat could not count iTLB-load-misses or L1-icache-load-misses "
                                  "on this CPU (<not supported>); time only")
    result.verdict, result.evidence = verdict(config, result)
    result.notes += design_notes(config, result)
    return result


def signed_rank_greater(d: list[float]) -> float:
    """One-sided Wilcoxon signed-rank p for median(d) > 0 (exact for small n; 1.0 when all 0)."""
    from scipy.stats import wilcoxon

    if not any(d):
        return 1.0
    return float(wilcoxon(d, alternative="greater").pvalue)


def _failure(params: dict, res: RunResult) -> str | None:
    if not res.ok:
        return res.failure or "failed"
    if "ns_per_iter" not in res.metrics:
        return "no ns_per_iter in the output"
    if params["mode"] == "2m" and res.metrics.get("huge_text_kb", 0) <= 0:
        return "2m run got no huge text pages (THP fragmentation?)"
    return None


def _per_dispatch(got: list[tuple[int, RunResult]], event: str, iters: int) -> float | None:
    """Median over runs of event / dispatches (the warm-up's n dispatches are not counted in)."""
    vals = [perfstat.per_unit(r.counters, event, iters) for _, r in got]
    return float(median(vals)) if vals and None not in vals else None


def counters_reason(counting: bool, why: str) -> str:
    """The counters line: counted, or why not and what counts without a PMU."""
    if counting:
        return "iTLB and L1i misses counted with perf stat"
    return f"no iTLB or L1i counts: {why}; time only (--instrument cachegrind counts simulated I1 misses)"


def _hw_counters(machine: Any) -> tuple[bool, str]:
    """(available, reason) from the machine capture's probe, else probe now."""
    probe = (machine.metadata or {}).get("probes", {}).get("hw_counters")
    if probe is not None:
        return bool(probe["available"]), str(probe["reason"])
    p = probes.hw_counters()
    return p.available, p.reason


def _probe_huge_text(binary: Path, session: Session) -> tuple[str | None, str]:
    """Does remapping text onto THP work here? (method or None, one-line reason)."""
    mode = thp_mode()
    if mode is None:
        return None, "2 MiB text pages: this kernel has no transparent huge pages; 4 KiB pages only"
    if mode == "never":
        return None, ("2 MiB text pages: THP is 'never' here; rerun with --allow-system-changes "
                      "to switch it to madvise for the scan (restored afterwards); 4 KiB pages only")
    res = session.run(RunSpec(argv=(str(binary), "1", "1", "--huge"), metrics=_METRICS, timeout=60,
                              label="probe-huge", params={"probe": "huge-text"}))
    kb = res.metrics.get("huge_text_kb")
    if not res.ok or not kb or kb <= 0:
        why = (res.stderr_tail or res.stdout_tail).strip().splitlines()
        return None, ("2 MiB text pages: remapping text onto THP failed ("
                      + (why[-1] if why else f"AnonHugePages {kb}") + "); 4 KiB pages only")
    return "thp-remap", (f"2 MiB text pages: text remapped onto anonymous THP at start (madvise + "
                         f"mremap; THP mode '{mode}'), verified in /proc/self/smaps: "
                         f"AnonHugePages {int(kb)} kB")


def _span(config: FrontendConfig, session: Session, binary: Path, layout: Any, n: int,
          cpu: int | None, ctx: Context) -> None:
    """perf-sample one run at n and keep the sampled code span (the seed's rip min..max)."""
    data = cache_root() / "frontend-span" / f"c{session.campaign_id}-{cpu}-{n}.data"
    data.parent.mkdir(parents=True, exist_ok=True)
    spec = RunSpec(argv=("perf", "record", "-q", "-e", "cpu-clock", "-F", "20000", "-o", str(data), "--",
                         str(binary), str(n), str(max(200_000, config.iters // 4))),
                   cpus=(cpu,) if cpu is not None else None, timeout=config.timeout,
                   label=f"perf-span n={n}", params={"span": n, "cpu": cpu})
    if session.run(spec).ok:
        span = sampled_span(data, layout.start, layout.end)
        if span is not None:
            ctx.spans[f"{cpu}:{n}"] = span + config.block_bytes
