"""Is one CPU of this machine persistently slower than the others? (seed 001: one core 12% slower)

Design: rounds. Sequential (default, seed 001's method): the workload runs pinned to each CPU in
turn, in an order shuffled anew each round. Concurrent (``concurrent``): one copy on every CPU at
once per round, released by a gate, as a farm node runs. Each round is a block: every CPU's cost
(wall seconds, or 1/metric for a higher-is-better metric) is divided by the median of the other
CPUs in the same round, so drift of the machine between rounds cancels.
Analysis (stats.blocked): Friedman's test over the rounds says whether any CPU differs; per CPU a
one-sided sign test of the share of rounds in which it was slower than the rest against 1/2
(detect.py: valid on skewed noise, where Wilcoxon's signed-rank test is not), Holm-corrected
over the CPUs. Slow = significant, median ratio >= 1 + min_effect, and persistent:
no more than (1 - ``persistence``) of its rounds *back at the others' level* (studies.cores.detect:
clearly below its own level and not a fast outlier), so noise that flips a round below 1 does not
break it. A significant CPU with more such rounds is intermittent, named with the rounds it was
slow in. Rounds whose ratio is an outlier (modified Z on the log-ratios with the pooled noise
scale, |Z| > 3.5) are reported as disturbance, not as a slow CPU. The smallest detectable
slowdown is simulated under the scan's own noise with the same rule (detect.detectable).
Adaptive stop after min_rounds: every CPU's ratio CI within ``precision`` and the smallest
detectable slowdown at most ``target`` (2 x min_effect: the median must reach min_effect, so a CPU
exactly at it is called slow only half the time); else rounds or max_time. Medians are shown in the
workload's primary metric, in its own direction; the verdict is composed from the rows
(result.compose_verdict).
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass
from typing import Any, Sequence

from perflab.errors import PerflabError
from perflab.model import RunResult, RunSpec, Workload
from perflab.platform.machine import Machine
from perflab.platform.sysfs import format_cpulist
from perflab.platform.topology import Topology
from perflab.stats import CI, holm
from perflab.stats.blocked import friedman, loo_log_ratios
from perflab.stats.modes import detect_modes
from perflab.studies.base import StudyConfig
from perflab.studies.cores.counters import COUNTER_EVENTS, per_cpu_counters
from perflab.studies.cores.detect import (allowed, detectable, noise_scale, round_sets, row_cis,
                                          sign_greater)
from perflab.studies.cores.result import (CoresResult, CpuRow, Disturbance, as_change, as_change_ci,
                                          compose_verdict, slow_cores)
from perflab.studies.instances.placement import usable_cpus

NAME = "cores"


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

    @property
    def target(self) -> float:
        """The slowdown the adaptive stop waits to be able to detect (module docstring)."""
        return 2 * self.min_effect

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
                    f"detectable slowdown {_pct(mde)} (stop at {config.target:.1%})")
        if rnd >= 1 and not ok_any:
            stopped = "failures"
            break
        if rnd + 1 >= config.min_rounds and precise <= config.precision and mde <= config.target:
            stopped = "precision"
            break
    result = analyse(config, runs, machine.topology)
    result.stopped, result.elapsed_s = stopped, time.monotonic() - started
    load = (machine.metadata or {}).get("loadavg") or [0.0]
    ncpu = len(machine.topology.cpus) or 1
    if load[0] > 0.5 * ncpu:
        result.notes.append(f"load average {load[0]:.1f} on {ncpu} CPUs at the start: other work competes, "
                            "and a CPU it is pinned to looks slow; rerun on a quiet machine to confirm")
    if stopped in ("rounds", "max-time") and (result.mde is None or result.mde > config.target):
        limit = f"--max-time {config.max_time:g}" if stopped == "max-time" else f"--rounds {config.rounds}"
        result.notes.append(f"stopped at {limit} before the scan could detect a {config.target:.1%} "
                            f"slowdown; raise {limit.split()[0]} or quiet the machine")
    return result


def _progress(dcols: list, config: CoresConfig) -> tuple[float, float]:
    """(widest ratio CI half-width, smallest detectable slowdown) from the per-round log-ratio
    columns so far (each computed once, when its round ends)."""
    import numpy as np

    d = np.stack(dcols, axis=1)
    cis = row_cis(d)
    if any(c.level == 0 or c.low != c.low for c in cis):
        return math.inf, math.inf
    widest = max((math.exp(c.high) - math.exp(c.low)) / 2 for c in cis)
    mde, _ = _detectable(d, config)
    return widest, mde


def _detectable(d, config: CoresConfig) -> tuple[float, str]:
    """(smallest slowdown the rule detects under the noise of d, why it is inf when it is):
    detect.detectable on the residuals of every CPU's log-ratios around its own median."""
    import numpy as np

    live = d[~np.isnan(d).all(axis=1)]
    n = int(np.median((~np.isnan(live)).sum(axis=1))) if live.size else 0
    m = max(live.shape[0], 1)
    sigma = noise_scale(live) if live.size else math.nan
    if sigma != sigma:
        return math.inf, "no noise estimate (fewer than 2 CPUs with successful runs in a round)"
    resid = (live - np.nanmedian(live, axis=1, keepdims=True)).ravel()
    mde = detectable(resid, n, m, sigma, config.alpha, config.min_effect, config.persistence, config.seed)
    if mde != math.inf:
        return mde, ""
    if 0.5 ** n > config.alpha / m:
        return mde, (f"too few rounds ({n}): even a CPU slower in every round cannot reach Holm's "
                     f"alpha/{m} = {config.alpha / m:.2g} (2^-{n} = {0.5 ** n:.2g}); raise --rounds")
    return mde, (f"too noisy ({sigma:.1%} round-to-round): not even +300% is called slow in 90% of "
                 "simulated scans; raise --rounds or quiet the machine")


def _pct(x: float) -> str:
    return f"{x:.1%}" if x != math.inf else "n/a"


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


def value_of(workload: Workload, cost: float) -> float:
    """The primary metric's own value (or wall seconds) for a cost from cost_of."""
    return 1.0 / cost if workload.primary_metric is not None and workload.higher_is_better else cost


def unit_of(workload: Workload) -> str:
    """How the medians print: the workload's unit, its metric's name, or seconds."""
    if workload.primary_metric is None:
        return "s"
    return workload.unit or workload.primary_metric


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

    wl = config.workload
    cpus = sorted({int(p["cpu"]) for p, _ in runs})
    rounds = sorted({int(p["round"]) for p, _ in runs if int(p["round"]) >= 0})
    ci_, ri = {c: i for i, c in enumerate(cpus)}, {r: i for i, r in enumerate(rounds)}
    cost = np.full((len(cpus), len(rounds)), np.nan)
    rows = {c: _row(c, topology) for c in cpus}
    res = CoresResult(mode="concurrent" if config.concurrent else "sequential", unit=unit_of(wl),
                      metric=wl.primary_metric or "time",
                      higher_is_better=wl.primary_metric is not None and wl.higher_is_better, rounds=len(rounds))
    for params, result in runs:
        cpu, rnd = int(params["cpu"]), int(params["round"])
        if rnd < 0:
            continue
        value, why = cost_of(wl, result)
        res.runs += 1
        if value is None:
            rows[cpu].failed += 1
            res.failed += 1
            res.failures[why or "failed"] = res.failures.get(why or "failed", 0) + 1
        else:
            rows[cpu].runs += 1
            cost[ci_[cpu], ri[rnd]] = value
    d = loo_log_ratios(cost)
    sigma = noise_scale(d)
    # medians and CIs in the metric's own values (the CI of 1/cost is 1/the CI of cost, swapped)
    shown = 1.0 / cost if res.higher_is_better else cost
    value_cis, d_cis = row_cis(shown), row_cis(d)
    res.noise = None if sigma != sigma else sigma
    scale = sigma if sigma == sigma and sigma > 0 else math.inf  # no noise: no outliers
    tested: list[tuple[CpuRow, dict[str, tuple[int, ...]]]] = []
    for cpu in cpus:
        row, x, dr = rows[cpu], shown[ci_[cpu]], d[ci_[cpu]]
        if row.runs == 0:
            row.verdict = "failed"
            continue
        row.median, row.ci = float(np.median(x[~np.isnan(x)])), value_cis[ci_[cpu]]
        have = ~np.isnan(dr)
        if have.any():
            rnds = tuple(rounds[i] for i in np.flatnonzero(have))
            tested.append((row, _test(row, dr[have], rnds, d_cis[ci_[cpu]], scale, config, res.higher_is_better)))
        else:
            row.verdict = "not tested"  # never ran in a round with another CPU
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
    if tested:
        res.mde, res.mde_why = _detectable(d, config)
    else:
        res.mde_why = "no CPU could be tested (fewer than 2 CPUs with successful runs in a round)"
    _modes(res, cost, ci_)
    if config.counters:
        per_cpu_counters(res, [(int(p["cpu"]), r.counters) for p, r in runs
                               if int(p["round"]) >= 0 and cost_of(wl, r)[0] is not None])
    res.verdict = compose_verdict(res)
    return res


def _test(row: CpuRow, vals, rnds: tuple[int, ...], c: CI, scale: float, config: CoresConfig,
          higher_is_better: bool) -> dict[str, tuple[int, ...]]:
    """Fill a CPU's ratio, change, rounds and p-value from its per-round log-ratios; return its
    round sets (detect.round_sets) as round numbers."""
    import numpy as np

    level = float(np.median(vals))
    row.ratio, row.ratio_ci = math.exp(level), CI(math.exp(c.low), math.exp(c.high), c.level)
    row.change = as_change(row.ratio, higher_is_better)
    row.change_ci = as_change_ci(row.ratio_ci, higher_is_better) if c.level > 0 else None
    row.rounds, row.slower_rounds = int(vals.size), int((vals > 0).sum())
    sets = round_sets(vals, level, scale, config.min_effect)
    row.normal = tuple(r for r, k in zip(rnds, sets["normal"]) if k)
    kept = vals[~sets["extra"]]
    row.p_value = sign_greater(int((kept > 0).sum()), int(kept.size))
    return {k: tuple(r for r, b in zip(rnds, mask) if b) for k, mask in sets.items()}


def _classify(row: CpuRow, sets: dict[str, tuple[int, ...]], config: CoresConfig) -> None:
    """slow, intermittent, disturbed or not significant, from the tested row (module docstring)."""
    big = row.ratio >= 1 + config.min_effect
    significant = row.p_adjusted < config.alpha and big
    # persistent unless clearly back at the others' level in more rounds than persistence allows:
    # rounds that noise flipped below 1 are not evidence of that (detect.round_sets)
    persistent = len(row.normal) <= allowed(row.rounds, config.persistence)
    if significant and persistent:
        row.verdict = "slow"
        row.disturbed = sets["extra"]  # what came on top of its slowness
    elif significant or (big and 2 * len(sets["clear"]) > row.rounds):
        # slower in most rounds, clearly back at the others' level in others; or clearly slower
        # (each round an outlier on its own) in most rounds, which noise alone does not do
        row.verdict = "intermittent"
        row.slow_rounds = row.disturbed = sets["high"]  # the rounds nearer its slow level than the others'
    elif sets["clear"]:
        row.verdict, row.disturbed = "disturbed", sets["clear"]
    else:
        row.verdict = "not significant"


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
