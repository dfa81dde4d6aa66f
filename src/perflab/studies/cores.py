"""Is one CPU of this machine slower than the others? (seed 001: one Haswell-EP core 12% slower)

The workload is pinned to each logical CPU in turn, in rounds whose CPU order is shuffled anew
each round, so that a drift of the machine (thermal, other load) spreads over all CPUs instead of
looking like a slow core. Per CPU: the median cost (wall seconds, or the inverse of a
higher-is-better metric such as s/event) with a bootstrap CI. Verdict: each CPU against the
pooled others, Mann-Whitney U with Holm's correction over the CPUs, and the ratio of medians with
its bootstrap CI as the effect size; a CPU is slow when the corrected p-value is below alpha, the
ratio's CI lies above 1 and the ratio is at least 1 + min_effect. Adaptive: after min_rounds, it
stops once every CPU's CI half-width is within ``precision`` of its median, or at max_time.
"""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from perflab.model import Workload
from perflab.errors import PerflabError
from perflab.platform.topology import Topology


@dataclass(frozen=True)
class CoresConfig:
    workload: Workload
    cpus: tuple[int, ...] | None = None  # None: every usable logical CPU
    physical: bool = False  # one thread per physical core
    rounds: int = 30  # most rounds
    min_rounds: int = 5
    max_time: float = 600.0  # seconds of measuring, checked before each run
    precision: float = 0.02  # stop when every CI half-width <= precision * median
    min_effect: float = 0.02  # a slow CPU is at least this much slower than the rest
    alpha: float = 0.05
    warmup: int = 1  # unrecorded runs before the first round (page cache, build)
    seed: int = 0
    timeout: float | None = None  # per run

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["workload"] = {"name": self.workload.name, "argv": list(self.workload.argv),
                         "primary_metric": self.workload.primary_metric}
        return d


@dataclass
class CpuStat:
    cpu: int
    socket: int
    core: int
    node: int
    siblings: tuple[int, ...]
    n: int
    median: float
    lo: float
    hi: float
    ratio: float | None = None  # median / median of the pooled other CPUs
    ratio_lo: float | None = None
    ratio_hi: float | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    slow: bool = False


@dataclass
class SlowCore:
    """A physical core with at least one slow thread, reported once."""

    core: int
    socket: int
    node: int
    cpus: tuple[int, ...]  # the flagged threads
    siblings: tuple[int, ...]  # all threads of the core
    ratio: float  # worst flagged thread's ratio
    ratio_lo: float
    ratio_hi: float
    p_adjusted: float


@dataclass
class CoresResult:
    campaign_id: int | None
    unit: str  # what median/lo/hi measure, e.g. "s" or "s per event (1/events_per_s)"
    rounds: int
    stopped: str  # "precision", "max-time" or "rounds"
    elapsed_s: float
    cpus: list[CpuStat] = field(default_factory=list)
    slow: list[SlowCore] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def cost_of(workload: Workload, result) -> float:
    """A run's cost, larger = slower: wall seconds, or 1/metric for a higher-is-better metric."""
    metric = workload.primary_metric
    if metric is None:
        return result.wall_s
    if metric not in result.metrics:
        raise PerflabError(
            f"the run printed no '{metric}' metric (exit {result.exit_code}); check the workload's "
            f"metric patterns or its output: {result.stderr_tail[-200:] or result.stdout_tail[-200:]!r}"
        )
    value = float(result.metrics[metric])
    if workload.higher_is_better:
        if value <= 0:
            raise PerflabError(f"metric '{metric}' is {value}; cannot invert it into a cost")
        return 1.0 / value
    return value


def unit_of(workload: Workload) -> str:
    metric = workload.primary_metric
    if metric is None:
        return "s"
    if workload.higher_is_better:
        return f"1/{metric}" if not metric.endswith("_per_s") else f"s per {metric[:-6].rstrip('s') or 'unit'}"
    return metric


def select_cpus(topology: Topology, cpus: tuple[int, ...] | None, physical: bool) -> list[int]:
    """The CPUs to scan: the requested list (checked) or all usable ones; one per core if asked."""
    from perflab.platform.sysfs import format_cpulist
    from perflab.studies.placement import usable_cpus

    usable = usable_cpus(topology)
    if cpus is None:
        chosen = list(usable)
    else:
        bad = sorted(set(cpus) - set(usable))
        if bad:
            raise PerflabError(
                f"CPU(s) {format_cpulist(bad)} are offline or not allowed here; usable CPUs: "
                f"{format_cpulist(usable)} (fix --cpus)"
            )
        chosen = sorted(set(cpus))
    if physical:
        seen: set[int] = set()
        out = []
        for c in chosen:
            core = topology.cpu(c).core
            if core not in seen:
                seen.add(core)
                out.append(c)
        chosen = out
    if len(chosen) < 2:
        raise PerflabError(f"need at least 2 CPUs to compare, got {format_cpulist(chosen) or 'none'} (fix --cpus)")
    return chosen


def run_cores(config: CoresConfig, executor, store, console=None, topology: Topology | None = None) -> CoresResult:
    """Scan the CPUs in shuffled rounds, stop adaptively, and give the verdict."""
    if topology is None:
        from perflab.platform.topology import read_topology

        topology = read_topology()
    if config.min_rounds < 2 or config.rounds < config.min_rounds:
        raise PerflabError(
            f"need 2 <= --min-rounds ({config.min_rounds}) <= --rounds ({config.rounds})"
        )
    cpus = select_cpus(topology, config.cpus, config.physical)
    load_note = _load_note(len(topology.cpus))
    host_id = _add_host(store, topology)
    campaign = store.start_campaign("cores", config.as_dict(), host_id=host_id)
    costs: dict[int, list[float]] = {c: [] for c in cpus}
    rng = random.Random(config.seed)
    started = time.monotonic()
    rounds_done = 0
    stopped = "rounds"
    try:
        for w in range(config.warmup):
            executor.run(_spec(config, cpus[w % len(cpus)], -1))
        for rnd in range(config.rounds):
            order = list(cpus)
            rng.shuffle(order)
            for cpu in order:
                if time.monotonic() - started > config.max_time:
                    stopped = "max-time"
                    break
                result = executor.run(_spec(config, cpu, rnd))
                store.add_measurement(campaign, result, {"cpu": cpu, "round": rnd}, rep=rnd, label=f"cpu{cpu}")
                if not result.ok:
                    raise PerflabError(
                        f"run on CPU {cpu} failed (exit {result.exit_code}, signal {result.signal}, "
                        f"timed out {result.timed_out}): {result.stderr_tail[-300:]!r}; fix the workload"
                    )
                costs[cpu].append(cost_of(config.workload, result))
            else:
                rounds_done += 1
                if console is not None:
                    console.print(f"round {rounds_done}: {_progress(costs, config)}", highlight=False)
                if rounds_done >= config.min_rounds and _precise(costs, config.precision):
                    stopped = "precision"
                    break
                continue
            break
        result = verdict(costs, topology, config)
        result.campaign_id = campaign
        result.rounds = rounds_done
        result.stopped = stopped
        result.elapsed_s = time.monotonic() - started
        result.unit = unit_of(config.workload)
        if load_note:
            result.notes.append(load_note)
        if stopped != "precision" and not _precise(costs, config.precision):
            limit = f"--max-time {config.max_time:g} s" if stopped == "max-time" else f"--rounds {config.rounds}"
            result.notes.append(
                f"stopped at {limit} before every CI was within {config.precision:.1%} of its median; "
                f"raise {limit.split()[0]} for a firmer verdict"
            )
        store.finish_campaign(campaign, "done", summary=result.as_dict())
        return result
    except KeyboardInterrupt:
        store.finish_campaign(campaign, "interrupted")
        raise
    except BaseException:
        store.finish_campaign(campaign, "failed")
        raise


def _spec(config: CoresConfig, cpu: int, rnd: int):
    return config.workload.spec(cpus=(cpu,), timeout=config.timeout, params={"cpu": cpu, "round": rnd})


def _add_host(store, topology: Topology) -> int | None:
    """Record the machine once per campaign (metadata is best-effort: B's collector may be absent)."""
    try:
        from perflab.platform.metadata import collect

        metadata = collect()
    except Exception:  # noqa: BLE001 - metadata is context, never a reason to lose a study
        metadata = {}
    return store.add_host(metadata, asdict(topology))


def _load_note(ncpu: int, root=None) -> str | None:
    """A warning when other work already keeps the CPUs busy (a busy CPU looks like a slow one)."""
    from perflab.platform.sysfs import Root

    text = (root or Root("/")).read("/proc/loadavg")
    try:
        load1 = float(text.split()[0]) if text else 0.0
    except ValueError:
        return None
    if load1 > 0.5 * ncpu:
        return (f"load average {load1:.1f} on {ncpu} CPUs at the start: other work competes, and a CPU "
                "it is pinned to looks slow; rerun on a quiet machine to confirm a slow CPU")
    return None


def _ci(xs: list[float]) -> tuple[float, float]:
    from perflab.stats import bootstrap_median_ci

    if len(xs) < 2:
        return (xs[0], xs[0]) if xs else (float("nan"), float("nan"))
    return bootstrap_median_ci(xs)


def _precise(costs: dict[int, list[float]], precision: float) -> bool:
    from perflab.stats import median

    for xs in costs.values():
        if len(xs) < 2:
            return False
        lo, hi = _ci(xs)
        if (hi - lo) / 2 > precision * median(xs):
            return False
    return True


def _progress(costs: dict[int, list[float]], config: CoresConfig) -> str:
    from perflab.stats import median

    if any(len(xs) < 2 for xs in costs.values()):
        return "a CI needs 2 rounds"
    worst = 0.0
    for xs in costs.values():
        if len(xs) >= 2:
            lo, hi = _ci(xs)
            worst = max(worst, (hi - lo) / 2 / median(xs))
    return f"widest CI half-width {worst:.1%} of the median (target {config.precision:.1%})"


def verdict(costs: dict[int, list[float]], topology: Topology, config: CoresConfig) -> CoresResult:
    """Per-CPU medians with CIs; each CPU against the pooled others (Mann-Whitney + Holm)."""
    from perflab.stats import holm, mann_whitney, median, ratio_of_medians

    stats: list[CpuStat] = []
    pvals: list[float] = []
    for cpu, xs in costs.items():
        info = topology.cpu(cpu)
        lo, hi = _ci(xs) if xs else (float("nan"), float("nan"))
        st = CpuStat(cpu, info.socket, info.core, info.node, info.siblings, len(xs),
                     median(xs) if xs else float("nan"), lo, hi)
        others = [x for c, ys in costs.items() if c != cpu for x in ys]
        if len(xs) >= 2 and len(others) >= 2:
            r = ratio_of_medians(xs, others, seed=config.seed)
            st.ratio, st.ratio_lo, st.ratio_hi = r.ratio, r.lo, r.hi
            st.p_value = mann_whitney(xs, others)[1]
        stats.append(st)
        pvals.append(1.0 if st.p_value is None else st.p_value)
    for st, p_adj in zip(stats, holm(pvals)):
        if st.p_value is None:
            continue
        st.p_adjusted = p_adj
        st.slow = (
            p_adj < config.alpha
            and st.ratio_lo is not None and st.ratio_lo > 1.0
            and st.ratio is not None and st.ratio >= 1.0 + config.min_effect
        )
    slow: dict[int, SlowCore] = {}
    for st in stats:
        if not st.slow:
            continue
        prev = slow.get(st.core)
        if prev is None:
            slow[st.core] = SlowCore(st.core, st.socket, st.node, (st.cpu,), st.siblings,
                                     st.ratio, st.ratio_lo, st.ratio_hi, st.p_adjusted)
        else:
            prev.cpus = tuple(sorted(prev.cpus + (st.cpu,)))
            if st.ratio > prev.ratio:
                prev.ratio, prev.ratio_lo, prev.ratio_hi = st.ratio, st.ratio_lo, st.ratio_hi
            prev.p_adjusted = min(prev.p_adjusted, st.p_adjusted)
    return CoresResult(
        campaign_id=None, unit="", rounds=0, stopped="", elapsed_s=0.0,
        cpus=sorted(stats, key=lambda s: s.cpu),
        slow=sorted(slow.values(), key=lambda s: -s.ratio),
    )


def render(result: CoresResult, console, workload_name: str = "") -> None:
    """Rich table of the per-CPU medians and the verdict."""
    from rich.table import Table

    scale, unit = _display_scale(result)
    from rich.markup import escape

    from perflab.platform.sysfs import format_cpulist

    table = Table(title=escape(f"perflab cores {workload_name}: median {unit} per CPU".replace("  ", " ")),
                  title_justify="left")
    for col in ("cpu", "socket", "core", "node", "siblings", "n", "median", "95% CI", "vs rest (CI)",
                "p Holm", "verdict"):
        table.add_column(col, justify="left" if col in ("siblings", "verdict") else "right")
    for st in result.cpus:
        ratio = "" if st.ratio is None else f"{st.ratio:.3f} ({st.ratio_lo:.3f}-{st.ratio_hi:.3f})"
        p = "" if st.p_adjusted is None else f"{st.p_adjusted:.2g}"
        table.add_row(
            str(st.cpu), str(st.socket), str(st.core), str(st.node), format_cpulist(st.siblings),
            str(st.n), f"{st.median * scale:.4g}", f"{st.lo * scale:.4g}-{st.hi * scale:.4g}",
            ratio, p, "[bold red]SLOW[/]" if st.slow else "",
        )
    console.print(table)
    console.print(f"{result.rounds} rounds, stopped by {result.stopped}, {result.elapsed_s:.1f} s")
    for note in result.notes:
        console.print(f"note: {note}", highlight=False)
    if not result.slow:
        console.print("verdict: no CPU is significantly slower than the others "
                      f"(each vs the pooled rest, Mann-Whitney + Holm)", highlight=False)
    for sc in result.slow:
        console.print(
            f"verdict: [bold red]slow core[/] {sc.core} (socket {sc.socket}, node {sc.node}, "
            f"threads {format_cpulist(sc.siblings)}; flagged {format_cpulist(sc.cpus)}): "
            + escape(f"{(sc.ratio - 1):+.1%} [{(sc.ratio_lo - 1):+.1%}, {(sc.ratio_hi - 1):+.1%}]") + " vs the rest, "
            f"p = {sc.p_adjusted:.2g} (Holm)"
        )


def _display_scale(result: CoresResult) -> tuple[float, str]:
    meds = [s.median for s in result.cpus if s.median == s.median]
    if result.unit in ("s",) or result.unit.startswith("s per"):
        m = max(meds) if meds else 1.0
        if m < 1e-3:
            return 1e6, result.unit.replace("s", "us", 1)
        if m < 1:
            return 1e3, result.unit.replace("s", "ms", 1)
    return 1.0, result.unit
