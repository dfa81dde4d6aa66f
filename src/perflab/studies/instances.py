"""How many concurrent instances give the most throughput, and what does NUMA placement gain?
(seed 004: throughput against instance count; one forking master per NUMA node gave up to +14%)

For each placement policy and each N, N copies are started through a gate (released together,
start spread measured) and the aggregate throughput is taken: the primary metric summed over the
copies (e.g. events/s), or copies/s = N / the longest wall time when the workload has no metric.
The (policy, N) points are repeated ``reps`` times in an order shuffled each round (drift-robust);
each point's median with a bootstrap CI, the marginal gain per added copy, the optimum N and the
smallest N within 1% of it are reported per policy. ``fork_master`` compares one unbound forking
master with one master per NUMA node bound to it (CPUs and memory), forking its share.
"""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from perflab.model import Workload
from perflab.errors import PerflabError
from perflab.platform.topology import Topology
from perflab.studies import placement

WITHIN = 0.01  # "smallest N within 1% of the optimum"


@dataclass(frozen=True)
class InstancesConfig:
    workload: Workload
    ns: tuple[int, ...] | None = None  # None: default_ns(2 x logical CPUs or max_n)
    max_n: int | None = None
    policies: tuple[str, ...] | None = None  # None: every policy meaningful on this machine
    reps: int = 3
    fork_master: bool = False
    numa_pin: bool = False  # numa policy: one CPU per copy instead of the node's CPU set
    seed: int = 0
    timeout: float | None = None

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["workload"] = {"name": self.workload.name, "argv": list(self.workload.argv),
                         "primary_metric": self.workload.primary_metric}
        return d


@dataclass
class Point:
    n: int
    throughput: float  # median over reps
    lo: float
    hi: float
    reps: int
    per_copy: float  # throughput / n
    gain_per_copy: float | None  # (T(n) - T(previous n)) / (n - previous n)
    start_spread_us: float  # median over reps
    samples: list[float] = field(default_factory=list)


@dataclass
class PolicyScan:
    policy: str
    points: list[Point]
    optimum_n: int
    optimum_throughput: float
    within_1pct_n: int  # smallest N whose throughput is within 1% of the optimum
    knee_n: float | None = None  # where the throughput curve bends (two-segment fit, BIC)
    notes: list[str] = field(default_factory=list)


@dataclass
class ForkRow:
    n: int  # workers in all
    no_numa: float  # one unbound master forking n workers
    numa: float  # one bound master per NUMA node forking its share
    gain: float  # numa / no_numa
    masters: list[tuple[int, int]]  # (node, workers)
    gain_lo: float | None = None  # bootstrap CI of the ratio of medians (needs reps >= 2)
    gain_hi: float | None = None


@dataclass
class InstancesResult:
    campaign_id: int | None
    unit: str
    ns: list[int]
    scans: list[PolicyScan]
    optimum_n: int
    optimum_throughput: float
    optimum_policy: str
    fork: list[ForkRow] | None = None
    notes: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def default_ns(limit: int) -> list[int]:
    """1, 2, 3, 4, 6, 8, 12, 16, 24, 32, ... (x1.5 / x1.33 steps) up to and including limit."""
    out = []
    k = 1
    while k <= limit:
        out.append(k)
        if k < 4:
            k += 1
        else:
            k = k * 3 // 2 if (k & (k - 1)) == 0 else k * 4 // 3
    if out[-1] != limit:
        out.append(limit)
    return out


def default_policies(topology: Topology) -> tuple[list[str], list[str]]:
    """Policies worth running here, and one line per policy skipped as identical to another."""
    n_nodes = len(placement.numa_nodes_with_cpus(topology))
    chosen = ["none", "compact"]
    skipped = []
    if topology.smt or len(topology.sockets) > 1 or n_nodes > 1:
        chosen += ["spread", "smt-last"] if topology.smt else ["spread"]
    else:
        skipped.append("spread, smt-last skipped: no SMT, one socket, one NUMA node (== compact)")
    if n_nodes > 1:
        chosen.append("numa")
    else:
        skipped.append("numa skipped: 1 NUMA node (numa == compact); ask for it with --policy numa")
    return chosen, skipped


def throughput_of(workload: Workload, results) -> float:
    """Aggregate throughput of one concurrent point: summed per-copy metric, or N / max wall."""
    bad = [r for r in results if not r.ok]
    if bad:
        r = bad[0]
        raise PerflabError(
            f"{len(bad)} of {len(results)} copies failed (exit {r.exit_code}, signal {r.signal}, "
            f"timed out {r.timed_out}): {r.stderr_tail[-300:]!r}; fix the workload or lower N"
        )
    metric = workload.primary_metric
    if metric is None:
        return len(results) / max(r.wall_s for r in results)
    missing = [r for r in results if metric not in r.metrics]
    if missing:
        raise PerflabError(f"a copy printed no '{metric}' metric: {missing[0].stdout_tail[-200:]!r}; "
                           "check the workload's metric patterns")
    values = [float(r.metrics[metric]) for r in results]
    if workload.higher_is_better:
        return sum(values)
    if min(values) <= 0:
        raise PerflabError(f"metric '{metric}' is not positive; cannot turn it into a rate")
    return sum(1.0 / v for v in values)


def unit_of(workload: Workload) -> str:
    metric = workload.primary_metric
    if metric is None:
        return "copies/s"
    if workload.higher_is_better:
        return metric.replace("_per_", "/") if "_per_" in metric else metric
    return f"1/{metric}"


def _fork_argv(workload: Workload, n: int) -> tuple[str, ...]:
    assert workload.fork_arg is not None
    return workload.argv + tuple(a.replace("{n}", str(n)) for a in workload.fork_arg)


def run_instances(config: InstancesConfig, executor, store, console=None,
                  topology: Topology | None = None) -> InstancesResult:
    """Scan throughput against N for each policy (and the fork-master NUMA comparison)."""
    if topology is None:
        from perflab.platform.topology import read_topology

        topology = read_topology()
    if config.reps < 1:
        raise PerflabError(f"--reps must be at least 1, got {config.reps}")
    if config.fork_master and config.workload.fork_arg is None:
        raise PerflabError(
            f"workload '{config.workload.name}' has no fork argument, so --fork-master cannot apply; "
            "use a workload with fork_arg (minihlt) or drop --fork-master"
        )
    ncpu = len(placement.usable_cpus(topology))
    ns = sorted(set(config.ns)) if config.ns else default_ns(config.max_n or 2 * ncpu)
    if ns[0] < 1:
        raise PerflabError(f"instance counts must be at least 1, got {ns[0]} (fix --n)")
    notes: list[str] = []
    if config.policies:
        policies = list(dict.fromkeys(config.policies))
        for p in policies:
            if p not in placement.POLICIES:
                raise PerflabError(f"unknown policy {p!r}: choose from {', '.join(placement.POLICIES)}")
    else:
        policies, notes = default_policies(topology)
    for p in policies:
        for note in dict.fromkeys(n for k in ns for n in placement.plan_notes(topology, k, p)
                                  if "oversubscribed" not in n):
            notes.append(f"{p}: {note}")
    if ns[-1] > ncpu:
        notes.append(f"N above {ncpu} oversubscribes the {ncpu} usable CPUs (bound policies reuse CPUs round-robin)")

    from perflab.platform.host import capture

    host_id = store.add_host(*capture(topology=topology).record())
    campaign = store.start_campaign("instances", config.as_dict(), host_id=host_id)
    started = time.monotonic()
    rng = random.Random(config.seed)
    samples: dict[tuple[str, int], list[float]] = {(p, n): [] for p in policies for n in ns}
    spreads: dict[tuple[str, int], list[int]] = {(p, n): [] for p in policies for n in ns}
    fork_samples: dict[tuple[str, int], list[float]] = {}
    try:
        points = [(p, n) for p in policies for n in ns]
        for rep in range(config.reps):
            order = list(points)
            rng.shuffle(order)
            for policy, n in order:
                slots = placement.plan(topology, n, policy, numa_pin=config.numa_pin)
                specs = [
                    config.workload.spec(
                        cpus=s.affinity, mem_node=s.mem_node, timeout=config.timeout,
                        params={"policy": policy, "n": n, "copy": s.copy},
                    )
                    for s in slots
                ]
                cr = executor.run_concurrent(specs, gate=True)
                for s, r in zip(slots, cr.results):
                    store.add_measurement(
                        campaign, r,
                        {"policy": policy, "n": n, "copy": s.copy, "cpus": list(s.cpus),
                         "mem_node": s.mem_node, "start_spread_ns": cr.start_spread_ns},
                        rep=rep, label=f"{policy}/n={n}",
                    )
                samples[(policy, n)].append(throughput_of(config.workload, cr.results))
                spreads[(policy, n)].append(cr.start_spread_ns)
            if console is not None:
                console.print(f"round {rep + 1}/{config.reps} done ({len(order)} points)", highlight=False)
        fork_rows = None
        if config.fork_master:
            fork_rows = _fork_scan(config, executor, store, campaign, topology, ns, rng, fork_samples, notes)
        scans = [_scan(p, ns, samples, spreads) for p in policies]
        best = max(scans, key=lambda s: s.optimum_throughput)
        result = InstancesResult(
            campaign_id=campaign, unit=unit_of(config.workload), ns=ns, scans=scans,
            optimum_n=best.optimum_n, optimum_throughput=best.optimum_throughput,
            optimum_policy=best.policy, fork=fork_rows, notes=notes,
            elapsed_s=time.monotonic() - started,
        )
        store.finish_campaign(campaign, "done", summary=result.as_dict())
        return result
    except KeyboardInterrupt:
        store.finish_campaign(campaign, "interrupted")
        raise
    except BaseException:
        store.finish_campaign(campaign, "failed")
        raise


def _scan(policy: str, ns: Sequence[int], samples, spreads) -> PolicyScan:
    from perflab.stats import bootstrap_median_ci, median

    points: list[Point] = []
    prev: Point | None = None
    for n in ns:
        xs = samples[(policy, n)]
        lo, hi = bootstrap_median_ci(xs) if len(xs) >= 2 else (xs[0], xs[0])
        t = median(xs)
        gain = None if prev is None else (t - prev.throughput) / (n - prev.n)
        pt = Point(n, t, lo, hi, len(xs), t / n, gain, median(spreads[(policy, n)]) / 1e3, list(xs))
        points.append(pt)
        prev = pt
    best = max(points, key=lambda p: p.throughput)
    within = min((p for p in points if p.throughput >= (1 - WITHIN) * best.throughput), key=lambda p: p.n)
    # Every repetition is a point of the fit, so 4 values of N with 3 reps are enough for a knee.
    from perflab.stats import knee

    xs = [float(p.n) for p in points for _ in p.samples]
    ys = [x for p in points for x in p.samples]
    k = knee(xs, ys) if len(set(xs)) >= 3 else None
    return PolicyScan(policy, points, best.n, best.throughput, within.n, knee_n=None if k is None else k.x)


def _fork_scan(config, executor, store, campaign, topology, ns, rng, fork_samples, notes) -> list[ForkRow]:
    """One unbound master forking N vs one bound master per NUMA node forking its share."""
    from perflab.stats import median, ratio_of_medians

    nodes = placement.numa_nodes_with_cpus(topology)
    if len(nodes) == 1:
        notes.append("fork-master: 1 NUMA node, so 'NUMA' is one master bound to that node "
                     "(the gain measures binding alone)")
    points = [(mode, n) for mode in ("no-numa", "numa") for n in ns]
    for rep in range(config.reps):
        order = list(points)
        rng.shuffle(order)
        for mode, n in order:
            if mode == "no-numa":
                specs = [config.workload.spec(argv=_fork_argv(config.workload, n), timeout=config.timeout,
                                              params={"mode": mode, "n": n, "master": 0})]
                where = [(None, n)]
            else:
                masters = placement.fork_masters(topology, n)
                specs = [config.workload.spec(argv=_fork_argv(config.workload, share), cpus=cpus,
                                              mem_node=node, timeout=config.timeout,
                                              params={"mode": mode, "n": n, "master": i})
                         for i, (node, share, cpus) in enumerate(masters)]
                where = [(node, share) for node, share, _ in masters]
            cr = executor.run_concurrent(specs, gate=True)
            for i, ((node, share), r) in enumerate(zip(where, cr.results)):
                store.add_measurement(campaign, r, {"mode": mode, "n": n, "master": i, "node": node,
                                                    "workers": share}, rep=rep, label=f"fork-{mode}/n={n}")
            fork_samples.setdefault((mode, n), []).append(throughput_of(config.workload, cr.results))
    rows = []
    for n in ns:
        a = median(fork_samples[("no-numa", n)])
        b = median(fork_samples[("numa", n)])
        masters = [(node, share) for node, share, _ in placement.fork_masters(topology, n)]
        row = ForkRow(n, a, b, b / a if a else float("nan"), masters)
        if config.reps >= 2:
            r = ratio_of_medians(fork_samples[("numa", n)], fork_samples[("no-numa", n)], seed=config.seed)
            row.gain_lo, row.gain_hi = r.lo, r.hi
        rows.append(row)
    return rows


SPARK = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float]) -> str:
    if not values:
        return ""
    lo, hi = min(values), max(values)
    span = hi - lo or 1.0
    return "".join(SPARK[min(len(SPARK) - 1, int((v - lo) / span * (len(SPARK) - 1) + 0.5))] for v in values)


def render(result: InstancesResult, console, workload_name: str = "") -> None:
    from rich.table import Table

    for note in result.notes:
        console.print(f"note: {note}", highlight=False)
    from rich.markup import escape

    table = Table(title=escape(f"perflab instances {workload_name}: aggregate throughput [{result.unit}]"),
                  title_justify="left")
    table.add_column("N", justify="right")
    for scan in result.scans:
        table.add_column(f"{scan.policy} (95% CI)", justify="right")
        table.add_column("gain/copy", justify="right")
    table.add_column("start spread", justify="right")
    for i, n in enumerate(result.ns):
        row = [str(n)]
        for scan in result.scans:
            p = scan.points[i]
            mark = "*" if n == scan.optimum_n else ""
            row.append(f"{_fmt(p.throughput)} ({_fmt(p.lo, 3)}-{_fmt(p.hi, 3)}){mark}")
            row.append("" if p.gain_per_copy is None else _fmt(p.gain_per_copy, sign=True))
        row.append(f"{result.scans[0].points[i].start_spread_us:.0f} us")
        table.add_row(*row)
    console.print(table)
    for scan in result.scans:
        console.print(
            f"{scan.policy:>8}: {sparkline([p.throughput for p in scan.points])}  optimum N = {scan.optimum_n} "
            f"({_fmt(scan.optimum_throughput)} {result.unit}); smallest N within 1%: {scan.within_1pct_n}"
            + (f"; knee at N = {scan.knee_n:g}" if scan.knee_n is not None else ""),
            highlight=False,
        )
    console.print(f"best: policy {result.optimum_policy}, N = {result.optimum_n}, "
                  f"{_fmt(result.optimum_throughput)} {result.unit}", highlight=False)
    if result.fork:
        ft = Table(title="fork-master: one unbound master vs one bound master per NUMA node", title_justify="left")
        for col in ("workers", f"{result.unit} no NUMA", f"{result.unit} NUMA", "NUMA gain (95% CI)", "masters (node:workers)"):
            ft.add_column(col, justify="right")
        for r in result.fork:
            ci = f" ({r.gain_lo:.3f}-{r.gain_hi:.3f})" if r.gain_lo is not None else ""
            ft.add_row(str(r.n), _fmt(r.no_numa), _fmt(r.numa), f"{r.gain:.3f}{ci}",
                       " ".join(f"{node}:{w}" for node, w in r.masters))
        console.print(ft)


def _fmt(x: float, digits: int = 4, sign: bool = False) -> str:
    return f"{x:+.{digits}g}" if sign else f"{x:.{digits}g}"


def render_plans(topology: Topology, ns: Sequence[int], policies: Sequence[str], console,
                 numa_pin: bool = False) -> None:
    """The placement of every copy for each policy and N, without running anything."""
    from rich.markup import escape
    from rich.table import Table

    from perflab.platform.sysfs import format_cpulist

    nodes = placement.numa_nodes_with_cpus(topology)
    console.print(f"{len(placement.usable_cpus(topology))} usable CPUs, {len(topology.cores)} cores, "
                  f"{len(topology.sockets)} sockets, NUMA nodes {', '.join(map(str, nodes))}", highlight=False)
    for policy in policies:
        table = Table(title=f"policy {policy}", title_justify="left")
        table.add_column("N", justify="right")
        table.add_column(escape("copy:cpus [mem node]"))
        for n in ns:
            slots = placement.plan(topology, n, policy, numa_pin=numa_pin)
            cells = []
            for s in slots:
                where = format_cpulist(s.cpus) if s.cpus else "any"
                cells.append(f"{s.copy}:{where}" + (f"[m{s.mem_node}]" if s.mem_node is not None else ""))
            notes = placement.plan_notes(topology, n, policy)
            table.add_row(str(n), escape("  ".join(cells) + (f"  ({'; '.join(notes)})" if notes else "")))
        console.print(table)
