"""Is one CPU of this machine persistently slower than the others? (seed 001: one core 12% slower)

Design: rounds. Sequential (default, seed 001's method): the workload runs pinned to each CPU in
turn, in an order shuffled anew each round. Concurrent (``concurrent``): one copy on every CPU at
once per round, released by a gate, as a farm node runs. Each round is a block: every CPU's cost
(wall seconds, or 1/metric for a higher-is-better metric) is divided by the median of the other
CPUs in the same round, so drift of the machine between rounds cancels.
Analysis (stats.blocked): Friedman's test over the rounds says whether any CPU differs; per CPU a
one-sided Wilcoxon signed-rank test of its per-round log-ratios against 0, Holm-corrected over
the CPUs. Slow = significant, median ratio >= 1 + min_effect with its CI above 1, and persistent:
slower than the rest, and not clearly below its own slow level, in at least ``persistence``
(90 %) of the rounds. Rounds whose ratio is an outlier (modified Z on the
log-ratios with the pooled noise scale, |Z| > 3.5) are reported as disturbance, not as a slow CPU.
Adaptive stop after min_rounds: every CPU's ratio CI within ``precision`` and the smallest
detectable slowdown (stats.blocked.min_detectable) at most min_effect; else rounds or max_time.
"""

from __future__ import annotations

import math
import random
import time
from functools import lru_cache
from dataclasses import dataclass
from typing import Any, Sequence

from perflab.errors import PerflabError
from perflab.model import RunResult, RunSpec, Workload
from perflab.platform.machine import Machine
from perflab.platform.sysfs import format_cpulist
from perflab.platform.topology import Topology
from perflab.stats import CI, holm, median_ci
from perflab.stats.blocked import friedman, loo_log_ratios, min_detectable, wilcoxon_greater
from perflab.stats.modes import detect_modes
from perflab.studies.base import StudyConfig
from perflab.studies.cores_counters import COUNTER_EVENTS, per_cpu_counters
from perflab.studies.cores_result import CoresResult, CpuRow, Disturbance, slow_cores
from perflab.studies.placement import usable_cpus

NAME = "cores"
OUTLIER_Z = 3.5  # Iglewicz & Hoaglin's modified Z cut-off
POWER = 0.8  # of the minimum detectable effect


@dataclass(frozen=True)
class CoresConfig(StudyConfig):
    workload: Workload
    cpus: tuple[int, ...] | None = None  # None: every usable logical CPU
    physical: bool = False  # one thread per physical core
    concurrent: bool = False  # one copy on every CPU at once per round
    rounds: int = 30  # most rounds
    min_rounds: int = 5
    max_time: float = 600.0  # seconds of measuring, checked before each run (each round if concurrent)
    precision: float = 0.03  # stop when every CPU's ratio CI half-width <= precision
    min_effect: float = 0.02  # a slow CPU is at least this much slower than the rest
    alpha: float = 0.05  # family-wise, over the CPUs (Holm)
    persistence: float = 0.9  # a slow CPU is at its slow level in at least this share of rounds
    warmup: int = 1  # unrecorded runs before the first round (page cache, build)
    seed: int = 0
    timeout: float | None = None  # per run
    counters: bool = False  # perf stat cycles/instructions per run: IPC and effective GHz per CPU

    decoders = {"workload": Workload.from_dict}

    def __post_init__(self) -> None:
        if not 2 <= self.min_rounds <= self.rounds:
            raise PerflabError(f"need 2 <= --min-rounds ({self.min_rounds}) <= --rounds ({self.rounds})")
        if not 0.5 < self.persistence <= 1:
            raise PerflabError(f"persistence {self.persistence} must be in (0.5, 1]")


Config = CoresConfig


def plan(config: CoresConfig, machine: Machine, round_: int = 0) -> list[RunSpec]:
    """One round: a run pinned to every scanned CPU, in this round's shuffled order."""
    order = select_cpus(machine.topology, config.cpus, config.physical)
    random.Random(f"{config.seed}:{round_}").shuffle(order)
    return [_spec(config, cpu, round_) for cpu in order]


def _spec(config: CoresConfig, cpu: int, round_: int) -> RunSpec:
    return config.workload.spec(cpus=(cpu,), timeout=config.timeout, params={"cpu": cpu, "round": round_},
                                perf_events=COUNTER_EVENTS if config.counters else None)


def execute(config: CoresConfig, session: Any, machine: Machine) -> CoresResult:
    """Run rounds until the verdict is precise enough, every run stored as it completes."""
    import numpy as np

    cpus = select_cpus(machine.topology, config.cpus, config.physical)
    for w in range(config.warmup):
        session.warmup(_spec(config, cpus[w % len(cpus)], -1))
    started = time.monotonic()
    runs: list[tuple[dict, RunResult]] = []
    dcols: list = []  # per round: every CPU's log-ratio to the others (in `cpus` order), or NaN
    ok_any = False
    index = {c: i for i, c in enumerate(cpus)}
    stopped = "rounds"
    for rnd in range(config.rounds):
        specs = plan(config, machine, rnd)
        done: list[tuple[RunSpec, RunResult]] = []
        if time.monotonic() - started > config.max_time:
            stopped = "max-time"
        elif config.concurrent:
            done = list(zip(specs, session.run_concurrent(specs, rep=rnd).results))
        else:
            for spec in specs:
                if time.monotonic() - started > config.max_time:
                    stopped = "max-time"
                    break
                done.append((spec, session.run(spec, rep=rnd)))
        column = np.full((len(cpus), 1), np.nan)
        for spec, res in done:
            runs.append((dict(spec.params), res))
            column[index[spec.params["cpu"]], 0] = cost_of(config.workload, res)[0] or np.nan
        if stopped == "max-time":
            break
        ok_any = ok_any or bool((~np.isnan(column)).any())
        dcols.append(loo_log_ratios(column)[:, 0])
        precise, mde = _progress(dcols, config)
        session.say(f"round {rnd + 1}: widest ratio CI half-width {_pct(precise)} (stop at {config.precision:.1%}), "
                    f"detectable slowdown {_pct(mde)} (stop at {config.min_effect:.1%})")
        if rnd >= 1 and not ok_any:
            stopped = "failures"
            break
        if rnd + 1 >= config.min_rounds and precise <= config.precision and mde <= config.min_effect:
            stopped = "precision"
            break
    result = analyse(config, runs, machine.topology)
    result.stopped, result.elapsed_s = stopped, time.monotonic() - started
    load = (machine.metadata or {}).get("loadavg") or [0.0]
    ncpu = len(machine.topology.cpus) or 1
    if load[0] > 0.5 * ncpu:
        result.notes.append(f"load average {load[0]:.1f} on {ncpu} CPUs at the start: other work competes, "
                            "and a CPU it is pinned to looks slow; rerun on a quiet machine to confirm")
    if stopped in ("rounds", "max-time") and (result.mde is None or result.mde > config.min_effect):
        limit = f"--max-time {config.max_time:g}" if stopped == "max-time" else f"--rounds {config.rounds}"
        result.notes.append(f"stopped at {limit} before the scan could see a {config.min_effect:.1%} "
                            f"slowdown; raise {limit.split()[0]} or quiet the machine")
    return result


def _progress(dcols: list, config: CoresConfig) -> tuple[float, float]:
    """(widest ratio CI half-width, smallest detectable slowdown) from the per-round log-ratio
    columns so far (each computed once, when its round ends)."""
    import numpy as np

    d = np.stack(dcols, axis=1)
    cis = _row_cis(d)
    if any(c.level == 0 or c.low != c.low for c in cis):
        return math.inf, math.inf
    widest = max((math.exp(c.high) - math.exp(c.low)) / 2 for c in cis)
    return widest, math.expm1(min_detectable(_noise(d), d.shape[1], config.alpha / d.shape[0], POWER))


@lru_cache(maxsize=None)
def _order(n: int) -> tuple[int, float]:
    """(j, level) of the order-statistic median CI [x(j), x(n+1-j)] for n values (stats.median_ci)."""
    c = median_ci(range(n))
    return int(c.low) + 1, c.level


def _row_cis(x) -> list[CI]:
    """median_ci of every row of x, NaNs left out, vectorised: one sort for all rows."""
    import numpy as np

    s = np.sort(x, axis=1)  # NaNs sort last
    out = []
    for row, n in zip(s, (~np.isnan(x)).sum(axis=1)):
        if n < 2:  # no interval: one value (or none) at level 0
            out.append(CI(float(row[0]), float(row[0]), 0.0))
            continue
        j, level = _order(int(n))
        out.append(CI(float(row[j - 1]), float(row[n - j]), level))
    return out


def _pct(x: float) -> str:
    return f"{x:.1%}" if x != math.inf else "n/a"


def _noise(d) -> float:
    """Robust SD of the round-to-round noise: 1.4826 x the MAD of every CPU's log-ratios around
    its own median, pooled over CPUs (mean absolute deviation x 1.2533 where the MAD is 0)."""
    import numpy as np

    d = d[~np.isnan(d).all(axis=1)]
    if d.size == 0:
        return math.nan
    dev = np.abs(d - np.nanmedian(d, axis=1, keepdims=True))
    dev = dev[~np.isnan(dev)]
    if dev.size == 0:
        return math.nan
    mad = float(np.median(dev))
    return 1.4826 * mad if mad > 0 else 1.2533 * float(dev.mean())


def cost_of(workload: Workload, result: RunResult) -> tuple[float | None, str | None]:
    """(cost, None) with cost larger = slower: wall seconds or 1/metric; (None, why) if unusable."""
    if not result.ok:
        return None, result.failure
    metric = workload.primary_metric
    if metric is None:
        return (result.wall_s, None) if result.wall_ns > 0 else (None, "no wall time")
    if metric not in result.metrics:
        return None, f"printed no '{metric}'"
    value = float(result.metrics[metric])
    if not workload.higher_is_better:
        return (value, None) if value > 0 else (None, f"{metric} = {value:g}")
    return (1.0 / value, None) if value > 0 else (None, f"{metric} = {value:g}")


def unit_of(workload: Workload) -> str:
    metric = workload.primary_metric
    if metric is None:
        return "s"
    if workload.higher_is_better:
        return f"1/{metric}" if not metric.endswith("_per_s") else f"s per {metric[:-6].rstrip('s') or 'unit'}"
    return metric


def select_cpus(topology: Topology, cpus: tuple[int, ...] | None, physical: bool) -> list[int]:
    """The CPUs to scan: the requested list (checked) or all usable ones; one per core if asked."""
    usable = usable_cpus(topology)
    if cpus is None:
        chosen = list(usable)
    else:
        bad = sorted(set(cpus) - set(usable))
        if bad:
            raise PerflabError(f"CPU(s) {format_cpulist(bad)} are offline or not allowed here; usable CPUs: "
                               f"{format_cpulist(usable)} (fix --cpus)")
        chosen = sorted(set(cpus))
    if physical:
        by_core: dict[int, int] = {}
        for c in chosen:
            by_core.setdefault(topology.cpu(c).core, c)
        chosen = list(by_core.values())
    if len(chosen) < 2:
        raise PerflabError(f"need at least 2 CPUs to compare, got {format_cpulist(chosen) or 'none'} (fix --cpus)")
    return chosen


def analyse(config: CoresConfig, runs: Sequence[tuple[dict, RunResult]],
            topology: Topology | None = None) -> CoresResult:
    """The verdict from stored runs ((params, result) pairs): per-round ratios, tests, disturbance."""
    import numpy as np

    cpus = sorted({int(p["cpu"]) for p, _ in runs})
    rounds = sorted({int(p["round"]) for p, _ in runs if int(p["round"]) >= 0})
    ci_, ri = {c: i for i, c in enumerate(cpus)}, {r: i for i, r in enumerate(rounds)}
    cost = np.full((len(cpus), len(rounds)), np.nan)
    rows = {c: _row(c, topology) for c in cpus}
    res = CoresResult(mode="concurrent" if config.concurrent else "sequential", unit=unit_of(config.workload),
                      rounds=len(rounds))
    for params, result in runs:
        cpu, rnd = int(params["cpu"]), int(params["round"])
        if rnd < 0:
            continue
        value, why = cost_of(config.workload, result)
        res.runs += 1
        if value is None:
            rows[cpu].failed += 1
            res.failed += 1
            res.failures[why or "failed"] = res.failures.get(why or "failed", 0) + 1
        else:
            rows[cpu].runs += 1
            cost[ci_[cpu], ri[rnd]] = value
    d = loo_log_ratios(cost)
    sigma = _noise(d)
    cost_cis, d_cis = _row_cis(cost), _row_cis(d)
    res.noise = None if sigma != sigma else sigma
    scale = sigma if sigma == sigma and sigma > 0 else math.inf  # no noise: no outliers
    tested: list[tuple[CpuRow, dict[str, tuple[int, ...]]]] = []
    for cpu in cpus:
        row, x, dr = rows[cpu], cost[ci_[cpu]], d[ci_[cpu]]
        if row.runs == 0:
            row.verdict = "failed"
            continue
        row.median, row.ci = float(np.median(x[~np.isnan(x)])), cost_cis[ci_[cpu]]
        have = ~np.isnan(dr)
        if have.any():
            rnds = tuple(rounds[i] for i in np.flatnonzero(have))
            tested.append((row, _test(row, dr[have], rnds, d_cis[ci_[cpu]], scale, config)))
    for (row, sets), p in zip(tested, holm([r.p_value for r, _ in tested])):
        row.p_adjusted = p
        _classify(row, sets, config)
        if row.verdict in ("intermittent", "disturbed"):
            sel = [d[ci_[row.cpu], ri[r]] for r in row.disturbed]
            res.disturbances.append(Disturbance(row.cpu, row.disturbed, math.exp(float(np.median(sel))),
                                                row.verdict == "intermittent"))
    res.cpus = [rows[c] for c in cpus]
    res.slow = slow_cores(res.cpus)
    live = [ci_[c] for c in cpus if rows[c].runs]
    if len(live) >= 2:
        stat, p, n = friedman(cost[live])
        res.friedman = {"statistic": stat, "p_value": p, "rounds": n, "cpus": len(live)}
    m = max(len(tested), 1)
    if sigma == sigma:
        res.mde = math.expm1(min_detectable(sigma, len(rounds), config.alpha / m, POWER))
    _modes(res, cost, ci_)
    if config.counters:
        per_cpu_counters(res, [(int(p["cpu"]), r.counters) for p, r in runs
                               if int(p["round"]) >= 0 and cost_of(config.workload, r)[0] is not None])
    res.verdict = _verdict(res, config)
    return res


def _test(row: CpuRow, vals, rnds: tuple[int, ...], c: CI, scale: float,
          config: CoresConfig) -> dict[str, tuple[int, ...]]:
    """Fill a CPU's ratio, rounds and p-value from its per-round log-ratios; return its outlier
    rounds: "extra" (above its own level), "clear" (clearly slower than the rest), "above"
    (a ratio of at least 1 + min_effect)."""
    import numpy as np

    level = float(np.median(vals))
    row.ratio, row.ratio_ci = math.exp(level), CI(math.exp(c.low), math.exp(c.high), c.level)
    row.rounds, row.slower_rounds = int(vals.size), int((vals > 0).sum())
    z, z0 = (vals - level) / scale, vals / scale  # modified Z against its own level, and against 0
    # Rounds it was not slow in: far below its own level AND not slower than the rest (below the
    # effect asked for, or not clearly above zero). A very steady slow CPU (a 10x competitor) has a
    # tiny spread, so a round at 8x is far below its level while still plainly slow.
    not_slow = (vals < math.log1p(config.min_effect)) | (z0 <= OUTLIER_Z)
    row.normal = tuple(r for r, v, ok in zip(rnds, z, not_slow) if v < -OUTLIER_Z and ok)
    row.p_value = wilcoxon_greater(vals[z <= OUTLIER_Z])
    # an outlier round smaller than the effect asked for is not worth a line
    big = vals >= math.log1p(config.min_effect)
    return {"extra": tuple(r for r, v, v0, b in zip(rnds, z, z0, big) if v > OUTLIER_Z and v0 > OUTLIER_Z and b),
            "clear": tuple(r for r, v0, b in zip(rnds, z0, big) if v0 > OUTLIER_Z and b),
            "above": tuple(r for r, b in zip(rnds, big) if b)}


def _classify(row: CpuRow, sets: dict[str, tuple[int, ...]], config: CoresConfig) -> None:
    """slow, intermittent, disturbed or nothing, from the tested row (see the module docstring)."""
    allowed = math.floor((1 - config.persistence) * row.rounds + 1e-9)
    big = row.ratio >= 1 + config.min_effect
    # the Wilcoxon test assumes symmetric noise; the median's own CI (sign-based, no such
    # assumption) must agree, or a few heavy rounds could carry the verdict
    significant = row.p_adjusted < config.alpha and big and row.ratio_ci.low > 1.0
    # persistent: slower than the rest in nearly every round, and in no more rounds than that
    # clearly below its own slow level
    persistent = row.rounds - row.slower_rounds <= allowed and len(row.normal) <= allowed
    if significant and persistent:
        row.verdict = "slow"
        row.disturbed = sets["extra"]  # what came on top of its slowness
        return
    row.disturbed = sets["clear"]  # every round in which it was clearly slower than the rest
    if significant:
        row.verdict, row.disturbed = "intermittent", row.disturbed or sets["above"]
    elif row.disturbed:
        row.verdict = "intermittent" if big and len(row.normal) > allowed else "disturbed"


def _row(cpu: int, topology: Topology | None) -> CpuRow:
    """A CPU's table row with its place in the topology (its own core where that is unknown)."""
    info = next((c for c in topology.cpus if c.id == cpu), None) if topology is not None else None
    return CpuRow(cpu, info.socket, info.core, info.node, tuple(info.siblings)) if info else CpuRow(cpu, 0, cpu, 0, (cpu,))


def _modes(res: CoresResult, cost, ci_: dict[int, int]) -> None:
    """Run times at several speeds (stats.modes on every successful run's cost), reported when
    the speeds alternate within CPUs: modes that only separate CPUs are the per-CPU verdict's."""
    import numpy as np

    cells = np.argwhere(~np.isnan(cost))
    if cells.shape[0] < 10:
        return
    modes = detect_modes(cost[~np.isnan(cost)])
    res.modes = modes.as_dict()
    if not modes.multimodal:
        return
    mixed = 0
    for row in res.cpus:
        mine = [lab for (i, _), lab in zip(cells, modes.labels) if i == ci_[row.cpu]]
        if mine:
            row.mode_shares = tuple(mine.count(k) / len(mine) for k in range(len(modes.modes)))
            mixed += sum(s > 0 for s in row.mode_shares) > 1
    if mixed < 2:
        res.modes["multimodal"] = False
        for row in res.cpus:
            row.mode_shares = ()


def _verdict(res: CoresResult, config: CoresConfig) -> str:
    if res.runs == 0:
        return "no run finished"
    if not any(r.runs for r in res.cpus):
        return f"every run failed ({', '.join(f'{k}: {v}' for k, v in res.failures.items())})"
    if res.slow:
        return "; ".join(f"slow core {s.core} (CPUs {format_cpulist(s.cpus)}): {s.ratio - 1:+.1%} vs the rest, "
                         f"slower in {s.slower_rounds} of {s.rounds} rounds" for s in res.slow)
    mde = "" if res.mde is None else f"; smallest detectable slowdown {max(res.mde, config.min_effect):.1%}"
    if res.mde == math.inf:
        mde = "; too few rounds to detect any slowdown"
    return f"no CPU is persistently slower than the rest{mde}"
