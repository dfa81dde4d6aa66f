"""`perflab run`: time one or more commands hyperfine-style, with medians, bootstrap CIs and
relative speed, every run stored as it completes.

Scheduling: warmup runs first, then rounds; each round runs every still-active benchmark once,
in an order shuffled per round (seeded), so slow drift of the machine hits all commands alike.
A benchmark stops after ``runs`` runs, or (adaptive ``precision``) when the bootstrap CI of its
median lies within +-precision of the median, bounded by min/max runs and max time.
"""

from __future__ import annotations

import math
import os
import random
import signal
from dataclasses import asdict, dataclass, field
from itertools import product
from typing import Any, Sequence

from perflab.errors import PerflabError
from perflab.model import MetricPattern, RunResult, RunSpec

DEFAULT_TIME_BUDGET_S = 3.0  # hyperfine's default: at least 10 runs and at least 3 s
CV_WARN = 0.05


@dataclass(frozen=True)
class Command:
    """One command to time: its display name (with {param} placeholders) and argv."""

    name: str
    argv: tuple[str, ...]
    shell: bool = False


@dataclass(frozen=True)
class RunConfig:
    commands: tuple[Command, ...]
    metrics: tuple[MetricPattern, ...] = ()
    primary_metric: str | None = None
    warmup: int = 0
    runs: int | None = None  # fixed number of runs per benchmark
    precision: float | None = None  # adaptive: CI of the median within +-precision (0.01 = 1%)
    min_runs: int = 10
    max_runs: int | None = None
    max_time: float | None = None  # seconds for the measured phase
    seed: int = 0
    parameters: tuple[tuple[str, tuple[str, ...]], ...] = ()
    cpus: tuple[int, ...] | None = None
    perf_stat: bool = False
    timeout: float | None = None
    ignore_failure: bool = False
    prepare: str | None = None  # shell command run before every timed run
    workload: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None


@dataclass
class Benchmark:
    """One command with one parameter combination, and what its runs measured."""

    command: str
    params: dict[str, str]
    spec: RunSpec
    results: list[RunResult] = field(default_factory=list)
    # filled in by analyse()
    summary: Any = None
    median_ci: tuple[float, float] = (math.nan, math.nan)
    outliers: list[int] = field(default_factory=list)
    relative: tuple[float, float, float] | None = None  # ratio to the fastest, lo, hi

    @property
    def times(self) -> list[float]:
        return [r.wall_ns / 1e9 for r in self.results]


@dataclass
class RunStudyResult:
    campaign_id: int | None
    store_display: str
    benchmarks: list[Benchmark]
    warnings: list[str]
    stopped_by: str  # "runs", "precision", "max-runs", "max-time", "time-budget"

    @property
    def fastest(self) -> Benchmark | None:
        ok = [b for b in self.benchmarks if b.results]
        return min(ok, key=lambda b: b.summary.median) if ok else None

    def to_dict(self) -> dict:
        out = []
        for b in self.benchmarks:
            out.append(dict(
                command=b.command, parameters=b.params,
                summary=b.summary.to_dict() if b.summary else None,
                median_ci=list(b.median_ci), outliers=b.outliers,
                relative=list(b.relative) if b.relative else None,
                times=b.times, n=len(b.results),
                user_mean=_mean([r.user_s for r in b.results]),
                system_mean=_mean([r.sys_s for r in b.results]),
                maxrss_kb_max=max((r.maxrss_kb for r in b.results), default=None),
                exit_codes=[r.exit_code for r in b.results],
                metrics=metric_medians(b),
            ))
        return dict(campaign_id=self.campaign_id, benchmarks=out, warnings=self.warnings,
                    stopped_by=self.stopped_by,
                    fastest=self.fastest.command if self.fastest else None)


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def metric_medians(b: Benchmark) -> dict[str, float]:
    from perflab.stats import median

    names: dict[str, list[float]] = {}
    for r in b.results:
        for k, v in r.metrics.items():
            names.setdefault(k, []).append(v)
    return {k: median(v) for k, v in names.items()}


def _substitute(text: str, params: dict[str, str]) -> str:
    for name, value in params.items():
        text = text.replace("{" + name + "}", value)
    return text


def expand(config: RunConfig) -> list[Benchmark]:
    """Commands x parameter combinations -> benchmarks with ready RunSpecs."""
    names = [p[0] for p in config.parameters]
    combos = list(product(*[p[1] for p in config.parameters])) or [()]
    events: tuple[str, ...] | None = () if config.perf_stat else None
    benches = []
    for cmd in config.commands:
        for combo in combos:
            params = dict(zip(names, combo))
            argv = tuple(_substitute(a, params) for a in cmd.argv)
            spec = RunSpec(
                argv=argv, shell=cmd.shell, cpus=config.cpus, timeout=config.timeout,
                metrics=config.metrics, perf_events=events, label=_substitute(cmd.name, params),
                params=params, capture_output=bool(config.metrics),
                env=dict(config.env) or None, cwd=config.cwd,
            )
            benches.append(Benchmark(spec.label, params, spec))
    return benches


def describe_failure(result: RunResult, timeout: float | None = None) -> str:
    """'exited with status 3', 'was killed by signal 11 (SIGSEGV)', 'timed out after 2 s'."""
    if result.timed_out:
        return f"timed out after {timeout:g} s and was killed" if timeout else "timed out"
    if result.signal is not None:
        try:
            name = signal.Signals(result.signal).name
        except ValueError:
            name = "unknown"
        return f"was killed by signal {result.signal} ({name})"
    return f"exited with status {result.exit_code}"


def _failure_error(bench: Benchmark, result: RunResult, timeout: float | None) -> PerflabError:
    last = next((ln.strip() for ln in reversed(result.stderr_tail.splitlines()) if ln.strip()), "")
    tail = f" (stderr: {last})" if last else ""
    fix = ("raise --timeout or make the command faster" if result.timed_out
           else "fix the command or pass --ignore-failure")
    return PerflabError(f"command '{bench.command}' {describe_failure(result, timeout)}{tail}: {fix}")


def _check_commands(benches: list[Benchmark], executor: object) -> None:
    from perflab.measure.executor import RealExecutor
    from perflab.measure.spawn import check_command

    if isinstance(executor, RealExecutor):
        for b in benches:
            check_command(b.spec.argv, b.spec.shell)


def _cpu_times() -> list[int] | None:
    from perflab.platform.sysfs import Root

    for line in (Root("/").read("proc/stat") or "").splitlines():
        if line.startswith("cpu "):
            return [int(v) for v in line.split()[1:]]
    return None


def run_run(config: RunConfig, executor, store, console=None) -> RunStudyResult:
    """Run the benchmarks of ``config``; every run goes to ``store`` as it completes."""
    if not config.commands:
        raise PerflabError("nothing to run: give a command after -- or commands as arguments")
    benches = expand(config)
    _check_commands(benches, executor)
    now = getattr(executor, "now_ns", None) or __import__("time").monotonic_ns

    host_id = None
    if store is not None:
        from perflab.platform.metadata import collect

        try:
            host_id = store.add_host(collect(), None)
        except Exception:  # metadata is nice to have; never lose a benchmark over it
            host_id = None
        cfg = asdict(config)
        campaign_id = store.start_campaign("run", cfg, host_id=host_id)
        display = store.display
    else:
        campaign_id, display = None, "(not stored)"

    cpu_before = _cpu_times()
    prepare = RunSpec(argv=(config.prepare,), shell=True, timeout=config.timeout,
                      capture_output=False) if config.prepare else None
    status = "failed"
    try:
        with _progress(console, benches) as tick:
            stopped = _schedule(config, benches, executor, store, campaign_id, now, prepare, tick)
        status = "done"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        if store is not None and status != "done":
            store.finish_campaign(campaign_id, status=status)

    warnings = analyse(benches, config, cpu_before)
    result = RunStudyResult(campaign_id, display, benches, warnings, stopped)
    if store is not None:
        store.finish_campaign(campaign_id, status="done", summary=result.to_dict())
    if console is not None:
        print_result(result, console)
    return result


def _run_prepare(prepare: RunSpec | None, executor) -> None:
    if prepare is None:
        return
    res = executor.run(prepare)
    if not res.ok:
        last = res.stderr_tail.strip().splitlines()[-1:] or [""]
        raise PerflabError(
            f"--prepare command '{prepare.argv[0]}' {describe_failure(res, prepare.timeout)}"
            f"{' (stderr: ' + last[0] + ')' if last[0] else ''}: fix the --prepare command"
        )


class _progress:
    """A transient progress line on a terminal (nothing otherwise): runs done per command."""

    def __init__(self, console, benches: list[Benchmark]) -> None:
        self.console, self.benches, self.bar = console, benches, None

    def __enter__(self):
        if self.console is None or not self.console.is_terminal:
            return lambda: None
        from rich.progress import Progress, TextColumn, TimeElapsedColumn

        # rich refreshes from its own thread at 4 Hz: no per-run terminal writes.
        self.bar = Progress(TextColumn("{task.description}"), TimeElapsedColumn(),
                            console=self.console, transient=True, refresh_per_second=4)
        self.bar.__enter__()
        task = self.bar.add_task("measuring")
        benches = self.benches

        def tick() -> None:
            done = sum(len(b.results) for b in benches)
            last = max(benches, key=lambda b: b.results[-1].end_ns if b.results else -1)
            self.bar.update(task, description=f"measuring: {done} runs, last: {last.command}")

        return tick

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)


def _schedule(config, benches, executor, store, campaign_id, now, prepare, tick=lambda: None) -> str:
    from perflab.stats import bootstrap_median_ci, median

    for b in benches:  # warmup: not stored, but a failure is still a failure
        for _ in range(config.warmup):
            _run_prepare(prepare, executor)
            res = executor.run(b.spec)
            if not res.ok and not config.ignore_failure:
                raise _failure_error(b, res, config.timeout)

    rng = random.Random(config.seed)
    active = list(range(len(benches)))
    target: dict[int, int] = {}
    if config.runs is not None:
        target = {i: config.runs for i in active}
    t0 = now()
    stopped = "runs" if config.runs is not None else "precision" if config.precision else "time-budget"
    first = True
    while active:
        order = list(active)
        if len(order) > 1:
            rng.shuffle(order)
        for i in order:
            b = benches[i]
            _run_prepare(prepare, executor)
            res = executor.run(b.spec)
            if store is not None:
                store.add_measurement(campaign_id, res, params=b.params, rep=len(b.results),
                                      label=b.command)
            b.results.append(res)
            if not res.ok and not config.ignore_failure:
                raise _failure_error(b, res, config.timeout)
            tick()
        if first and config.runs is None and config.precision is None:
            # hyperfine's rule: enough runs to fill the time budget, at least min_runs.
            for i in active:
                t = max(benches[i].results[0].wall_ns / 1e9, 1e-6)
                n = max(config.min_runs, math.ceil(DEFAULT_TIME_BUDGET_S / t))
                target[i] = min(n, config.max_runs) if config.max_runs else n
        first = False
        still = []
        for i in active:
            n = len(benches[i].results)
            if config.max_runs is not None and n >= config.max_runs:
                stopped = "max-runs" if config.precision else stopped
                continue
            if config.precision is not None and config.runs is None:
                if n >= max(config.min_runs, 2):
                    xs = benches[i].times
                    lo, hi = bootstrap_median_ci(xs, seed=config.seed)
                    med = median(xs)
                    if lo >= med * (1 - config.precision) and hi <= med * (1 + config.precision):
                        continue
                still.append(i)
            elif n < target[i]:
                still.append(i)
        active = still
        if active and config.max_time is not None and (now() - t0) / 1e9 >= config.max_time:
            if all(len(benches[i].results) >= 2 for i in active):
                stopped = "max-time"
                break
    return stopped


def analyse(benches: list[Benchmark], config: RunConfig, cpu_before: list[int] | None) -> list[str]:
    """Summaries, median CIs, outliers, ratios to the fastest; noise warnings."""
    from perflab.stats import bootstrap_median_ci, mad_outliers, ratio_of_medians, summary

    warnings: list[str] = []
    for b in benches:
        xs = b.times
        if not xs:
            continue
        b.summary = summary(xs)
        b.median_ci = bootstrap_median_ci(xs, seed=config.seed)
        b.outliers = mad_outliers(xs) if len(xs) >= 3 else []
        if b.outliers:
            warnings.append(
                f"'{b.command}': {len(b.outliers)} of {len(xs)} runs are outliers (modified "
                "Z-score > 3.5): other load disturbed them; the median and its CI resist them, "
                "but consider --warmup or a quieter machine")
        if b.summary.n >= 3 and b.summary.mean > 0 and b.summary.stddev / b.summary.mean > CV_WARN:
            warnings.append(f"'{b.command}': noisy, coefficient of variation "
                            f"{100 * b.summary.stddev / b.summary.mean:.1f}% > {100 * CV_WARN:.0f}%")
        if config.warmup == 0 and len(xs) >= 5 and xs[0] > 2 * b.summary.median:
            warnings.append(f"'{b.command}': the first run took {xs[0] / b.summary.median:.1f}x "
                            "the median (cold caches?): consider --warmup 1 or more")
    if config.perf_stat:
        warnings.append("with --perf-stat the wall times, user/sys and max RSS include perf's own "
                        "start-up: compare the counters (duration_time is the command's own wall "
                        "time in ns), or rerun without --perf-stat for timings")
    ok = [b for b in benches if b.results]
    if len(ok) > 1:
        fastest = min(ok, key=lambda b: b.summary.median)
        for b in ok:
            if b is fastest:
                b.relative = (1.0, 1.0, 1.0)
            else:
                r = ratio_of_medians(b.times, fastest.times, seed=config.seed)
                b.relative = (r.ratio, r.lo, r.hi)
    ncpu = os.cpu_count() or 1
    try:
        load1 = os.getloadavg()[0]
    except OSError:
        load1 = 0.0
    if load1 > ncpu:
        warnings.append(f"load average {load1:.2f} on {ncpu} CPUs: other processes competed "
                        "with the benchmark")
    after = _cpu_times()
    if cpu_before and after and len(after) >= 8 and len(cpu_before) >= 8:
        total = sum(after[:8]) - sum(cpu_before[:8])
        steal = (after[7] - cpu_before[7]) / total if total > 0 else 0.0
        if steal > 0.01:
            warnings.append(f"the hypervisor stole {100 * steal:.1f}% of CPU time during the "
                            "benchmark: timings of a VM are noisy")
    return warnings


def fmt_time(seconds: float, unit: str | None = None) -> str:
    unit = unit or time_unit(seconds)
    scale = {"s": 1.0, "ms": 1e3, "µs": 1e6}[unit]
    return f"{seconds * scale:.2f} {unit}" if unit != "s" else f"{seconds:.3f} s"


def time_unit(seconds: float) -> str:
    return "s" if seconds >= 1 else "ms" if seconds >= 1e-3 else "µs"


def _num(v: float) -> str:
    """Counts and checksums in full with thousands separators, other values to 6 digits."""
    if math.isfinite(v) and abs(v) >= 1e5 and float(v).is_integer():
        return f"{v:,.0f}"
    return f"{v:.6g}"


def print_result(result: RunStudyResult, console) -> None:
    """The rich table: median [CI], mean +- sd, min/max, user/sys, max RSS, metrics, relative."""
    from rich.table import Table

    table = Table(title="perflab run", show_lines=False)
    for col in ("command", "runs", "median [95% CI]", "mean ± σ", "min…max", "user/sys",
                "maxRSS"):
        if col == "command":
            width = max((len(b.command) for b in result.benchmarks), default=8)
            table.add_column(col, min_width=min(width, 24))
        else:
            table.add_column(col, justify="right")
    many = len(result.benchmarks) > 1
    if many:
        table.add_column("relative [95% CI]", justify="right")
    narrow = console.width < 110
    for b in result.benchmarks:
        if not b.results:
            continue
        s = b.summary
        u = time_unit(s.median)
        user = _mean([r.user_s for r in b.results]) or 0.0
        sys_ = _mean([r.sys_s for r in b.results]) or 0.0
        rss = max(r.maxrss_kb for r in b.results)
        num = lambda x: fmt_time(x, u).split()[0]  # noqa: E731
        rel = ""
        if many and b.relative:
            r, lo, hi = b.relative
            rel = "1.00" if r == 1.0 and lo == hi == 1.0 else f"{r:.2f} [{lo:.2f}, {hi:.2f}]"
        if narrow:
            # hyperfine-like block per command: a table does not fit a narrow terminal
            console.print(f"[bold]{b.command}[/bold]", highlight=False)
            console.print(
                f"  median {fmt_time(s.median, u)} [{num(b.median_ci[0])}, {num(b.median_ci[1])}]"
                f"   mean {fmt_time(s.mean, u)} ± {num(s.stddev)}   range {num(s.min)} … "
                f"{fmt_time(s.max, u)}\n  user {num(user)} / sys {fmt_time(sys_, u)}   max RSS "
                f"{rss / 1024:.1f} MiB   {s.n} runs" + (f"   relative {rel}" if rel else ""),
                highlight=False)
            continue
        row = [
            b.command, str(s.n),
            f"{fmt_time(s.median, u)} [{num(b.median_ci[0])}, {num(b.median_ci[1])}]",
            f"{fmt_time(s.mean, u)} ± {num(s.stddev)}",
            f"{num(s.min)}…{num(s.max)}",
            f"{num(user)}/{num(sys_)}",
            f"{rss / 1024:.1f} MiB",
        ]
        if many:
            row.append(rel)
        table.add_row(*row)
    if not narrow:
        console.print(table)
    metric_names = sorted({k for b in result.benchmarks for r in b.results for k in r.metrics})
    if metric_names:
        # A table of its own: a workload like minihlt reports half a dozen metrics.
        mt = Table(title="metrics (median per run)")
        mt.add_column("command")
        for name in metric_names:
            mt.add_column(name, justify="right")
        for b in result.benchmarks:
            meds = metric_medians(b)
            mt.add_row(b.command, *(_num(meds[m]) if m in meds else "-" for m in metric_names))
        console.print(mt)
    counters = sorted({k for b in result.benchmarks for r in b.results for k in r.counters})
    if counters:
        from perflab.stats import median

        ct = Table(title="perf stat (median per run)")
        ct.add_column("command")
        for c in counters:
            ct.add_column(c, justify="right")
        for b in result.benchmarks:
            vals = [median([r.counters[c] for r in b.results if c in r.counters] or [math.nan])
                    for c in counters]
            ct.add_row(b.command, *(_num(v) for v in vals))
        console.print(ct)
    fastest = result.fastest
    if fastest is not None and len(result.benchmarks) > 1:
        console.print(f"fastest: [bold]{fastest.command}[/bold]", highlight=False)
        for b in result.benchmarks:
            if b is not fastest and b.relative:
                r, lo, hi = b.relative
                console.print(f"  {r:.2f}x [{lo:.2f}, {hi:.2f}] slower: {b.command}",
                              highlight=False, markup=False)
    for w in result.warnings:
        console.print(f"[yellow]warning:[/yellow] {w}", highlight=False)
    where = f", campaign {result.campaign_id}" if result.campaign_id is not None else ""
    console.print(f"perflab: results in {result.store_display}{where}", highlight=False)
