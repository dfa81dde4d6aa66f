"""Terminal rendering of an instances study and of a placement plan (rich)."""

from __future__ import annotations

from typing import Sequence

from rich.markup import escape
from rich.table import Table

from perflab.platform.sysfs import format_cpulist
from perflab.platform.topology import Topology
from perflab.platform.affinity import usable_cpus
from perflab.studies.instances import placement
from perflab.studies.instances.result import InstancesResult

SPARK = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float]) -> str:
    if not values:
        return ""
    lo, hi = min(values), max(values)
    span = hi - lo or 1.0
    return "".join(SPARK[min(len(SPARK) - 1, int((v - lo) / span * (len(SPARK) - 1) + 0.5))] for v in values)


def _fmt(x: float | None, digits: int = 4, sign: bool = False) -> str:
    if x is None:
        return "-"
    return f"{x:+.{digits}g}" if sign else f"{x:.{digits}g}"


def render(result: InstancesResult, console, workload_name: str = "") -> None:
    """The throughput table per policy, the optimum, the fork-master comparison and its verdict."""
    for note in result.notes:
        console.print(f"note: {note}", highlight=False)
    how = f"the sum of the copies' {result.own_metric}" if result.summed else "total work / makespan"
    table = Table(title=escape(f"perflab instances {workload_name}: machine throughput [{result.unit}] "
                               f"= {how}"), title_justify="left")
    table.add_column("N", justify="right")
    # one round is no interval: the column says so instead of a "0% CI" of one value
    level = f"{result.level:.0%} CI" if result.level > 0 else "1 round, no CI"
    for scan in result.scans:
        table.add_column(escape(f"{scan.policy} ({level})"), justify="right")
        table.add_column("gain/copy", justify="right")
    own = result.own_metric
    if own:
        table.add_column(escape(f"{own} per copy"), justify="right")
    table.add_column("start spread", justify="right")
    for i, n in enumerate(result.ns):
        row = [str(n)]
        for scan in result.scans:
            p = scan.points[i]
            if p.throughput is None:
                row += [f"failed ({p.failed} rounds)", ""]
                continue
            mark = "*" if n == scan.optimum_n else ""
            if p.ci is None:
                row.append(f"{_fmt(p.throughput)} ({p.reps} round){mark}")
            else:
                # fewer rounds (failures) give a lower level than the column's: say it in the cell
                lvl = "" if abs(p.ci.level - result.level) < 1e-9 else f", {p.ci.level:.0%}"
                row.append(f"{_fmt(p.throughput)} ({_fmt(p.ci.low, 3)}-{_fmt(p.ci.high, 3)}{lvl}){mark}")
            row.append("" if p.gain_per_copy is None else _fmt(p.gain_per_copy, sign=True))
        first = result.scans[0].points[i] if result.scans else None
        if own:
            row.append(_fmt(first.own_metric) if first else "-")
        spread = first.start_spread_us if first else None
        row.append("-" if spread is None else f"{spread:.0f} us")
        table.add_row(*row)
    console.print(table)
    if result.ranked_by:
        console.print(f"{result.ranked_by}; * marks the optimum", highlight=False)
    if own:
        way = "higher" if result.own_higher_is_better else "lower"
        beside = ("the machine throughput is its sum over the copies" if result.summed
                  else "it is never summed into machine throughput")
        console.print(f"({own} per copy, {way} is better, is the workload's own figure for policy "
                      f"{result.scans[0].policy}, shown beside; {beside})", highlight=False)
    for scan in result.scans:
        spark = sparkline([p.throughput for p in scan.points if p.throughput is not None])
        if scan.optimum_n is None:
            console.print(f"{scan.policy:>8}: {spark}  no optimum: {scan.reason}", highlight=False)
            continue
        console.print(
            f"{scan.policy:>8}: {spark}  optimum N = {scan.optimum_n} ({_fmt(scan.optimum_throughput)} "
            f"{result.unit})" + (f"; knee at N = {scan.knee_n:g}" if scan.knee_n is not None else "")
            # the answer's own policy gives its reason in the answer line below
            + ("" if scan.policy == result.optimum_policy else f": {scan.reason}"), highlight=False)
    console.print(f"answer: {result.verdict()}", highlight=False)
    if any(p.ipc is not None or p.llc_per_unit is not None for scan in result.scans for p in scan.points):
        _render_counters(result, console)
    if result.energy_source:
        _render_energy(result, console)
    mem = result.memory
    if mem:
        nodes = ", ".join(f"node {k}: {_mib(v)}" for k, v in mem["per_node_kb"].items())
        console.print(f"memory at the optimum ({mem['policy']}, N = {mem['n']}), peak PSS: "
                      f"{_mib(mem['per_copy_kb'])} per copy; {nodes}; {_mib(mem['total_kb'])} in all",
                      highlight=False)
    if result.fork:
        _render_fork(result, console)


def _work_unit(result: InstancesResult) -> str:
    """One unit of the work joules and misses are counted per: an event, or a copy (also where
    the throughput is a summed rate, whose energy and counters are per copy)."""
    base = result.unit.split("/")[0]
    if result.summed or base == "copies":
        return "copy"
    return base[:-1] if base.endswith("s") else base


def _render_energy(result: InstancesResult, console) -> None:
    """Node watts and joules per unit of work against copies, and the energy-optimal N."""
    scan = next((s for s in result.scans if s.policy == result.optimum_policy), result.scans[0])
    table = Table(title=escape(f"energy against copies, policy {scan.policy} ({result.energy_source})"),
                  title_justify="left")
    for col in ("N", "watts", f"joules per {_work_unit(result)}"):
        table.add_column(escape(col), justify="right")
    for p in scan.points:
        table.add_row(str(p.n), "-" if p.watts is None else _fmt(p.watts),
                      "-" if p.joules_per_unit is None else _fmt(p.joules_per_unit))
    console.print(table)
    if result.energy_optimum_n is not None:
        same = result.energy_optimum_n == result.optimum_n
        console.print(f"fewest joules per unit of work at N = {result.energy_optimum_n}"
                      + (" (the throughput optimum too)" if same else
                         f"; the most throughput is at N = {result.optimum_n}"), highlight=False)


def _render_counters(result: InstancesResult, console) -> None:
    work = _work_unit(result)
    table = Table(title="hardware counters against copies (all copies of a point together)",
                  title_justify="left")
    table.add_column("N", justify="right")
    for scan in result.scans:
        table.add_column(f"{scan.policy} IPC", justify="right")
        table.add_column(escape(f"LLC misses/{work}"), justify="right")
    for i, n in enumerate(result.ns):
        row = [str(n)]
        for scan in result.scans:
            p = scan.points[i]
            row += [_fmt(p.ipc, 3), _fmt(p.llc_per_unit, 4)]
        table.add_row(*row)
    console.print(table)


def _mib(kb: float | None) -> str:
    return "-" if kb is None else f"{kb / 1024:.1f} MiB"


def _render_fork(result: InstancesResult, console) -> None:
    ft = Table(title="fork-master at equal work: one unbound master vs one bound master per NUMA node",
               title_justify="left")
    for col in ("workers", f"{result.unit} no NUMA", f"{result.unit} NUMA", "NUMA gain (CI)",
                "masters (node:workers:events)", "PSS no NUMA / NUMA"):
        ft.add_column(escape(col), justify="right")
    for r in result.fork or ():
        ci = f" ({r.ci.low:.3f}-{r.ci.high:.3f}, {r.ci.level:.0%})" if r.ci is not None else ""
        gain = "-" if r.gain is None else f"{r.gain:.3f}{ci}"
        ft.add_row(str(r.n), _fmt(r.no_numa), _fmt(r.numa), gain,
                   " ".join(":".join(map(str, m)) for m in r.masters),
                   f"{_mib(r.no_numa_pss_kb)} / {_mib(r.numa_pss_kb)}")
    console.print(ft)
    if result.fork_verdict is not None:
        console.print(f"verdict: {result.fork_verdict.text}", highlight=False)


def render_plans(topology: Topology, ns: Sequence[int], policies: Sequence[str], console,
                 numa_pin: bool = False, threads: int = 1) -> None:
    """The placement of every copy for each policy and N, without running anything."""
    nodes = placement.numa_nodes_with_cpus(topology)
    console.print(f"{len(usable_cpus(topology))} usable CPUs, {len(topology.cores)} cores, "
                  f"{len(topology.sockets)} sockets, NUMA nodes {', '.join(map(str, nodes))}", highlight=False)
    for policy in policies:
        table = Table(title=f"policy {policy}", title_justify="left")
        table.add_column("N", justify="right")
        table.add_column(escape("copy:cpus [mem node]"))
        for n in ns:
            slots = placement.plan(topology, n, policy, numa_pin=numa_pin, threads=threads)
            cells = []
            for s in slots:
                where = format_cpulist(s.cpus) if s.cpus else "any"
                cells.append(f"{s.copy}:{where}" + (f"[m{s.mem_node}]" if s.mem_node is not None else ""))
            notes = placement.plan_notes(topology, n, policy, threads)
            table.add_row(str(n), escape("  ".join(cells) + (f"  ({'; '.join(notes)})" if notes else "")))
        console.print(table)
