"""The verdict of a per-core scan from its stored runs (study.py's module docstring: the method).

Steps: a cost matrix (CPUs x rounds) -> costs compared within a speed mode (speeds.py) ->
per-round leave-one-out log-ratios -> per CPU the round rule (detect.py: ratio, sign test,
persistence) and the block test over time (timeline.py) -> Holm over the CPUs -> how long the
machine's slowness holds -> each CPU's verdict -> the smallest detectable slowdown of the same
rule -> the sentence (result.compose_verdict).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from perflab.model import RunResult
from perflab.platform.topology import Topology
from perflab.stats import CI, holm
from perflab.stats.blocked import friedman, loo_log_ratios
from perflab.studies.cores import looks, speeds, timeline
from perflab.studies.cores.counters import per_cpu_counters
from perflab.studies.cores.detect import (BLOCK_DROP, OUTLIER_Z, allowed, block_detectable, detectable, noise_scale,
                                          round_sets, row_cis, sign_greater)
from perflab.studies.cores.result import (CoresResult, CpuRow, Disturbance, as_change, as_change_ci,
                                          compose_verdict, rounds_text, slow_cores)


def analyse(config: Any, runs: Sequence[tuple[dict, RunResult]], topology: Topology | None,
            cost_of, unit: str, level: float | None = None) -> CoresResult:
    """The verdict from stored runs ((params, result) pairs). ``level``: --until-decided's look,
    each CPU judged by its repeated interval at that level (looks.py); its decisions go to
    ``res.sequential["cpus"]``."""
    import numpy as np

    wl = config.workload
    cpus = sorted({int(p["cpu"]) for p, _ in runs})
    rounds = sorted({int(p["round"]) for p, _ in runs if int(p["round"]) >= 0})
    ci_, ri = {c: i for i, c in enumerate(cpus)}, {r: i for i, r in enumerate(rounds)}
    cost = np.full((len(cpus), len(rounds)), np.nan)
    block_of = [-1] * len(rounds)
    starts = np.full(len(rounds), np.inf)
    rows = {c: _row(c, topology) for c in cpus}
    res = CoresResult(mode="concurrent" if config.concurrent else "sequential", unit=unit,
                      metric=wl.primary_metric or "time",
                      higher_is_better=wl.primary_metric is not None and wl.higher_is_better, rounds=len(rounds))
    for params, result in runs:
        cpu, rnd = int(params["cpu"]), int(params["round"])
        if rnd < 0:
            continue
        j = ri[rnd]
        block_of[j] = max(block_of[j], int(params.get("block", -1)))
        starts[j] = min(starts[j], result.start_ns / 1e9 if result.start_ns > 0 else math.nan)
        value, why = cost_of(wl, result)
        res.runs += 1
        if value is None:
            rows[cpu].failed += 1
            res.failed += 1
            res.failures[why or "failed"] = res.failures.get(why or "failed", 0) + 1
        else:
            rows[cpu].runs += 1
            cost[ci_[cpu], j] = value
    times = starts - starts[0] if starts.size and np.isfinite(starts).all() else np.full(len(rounds), np.nan)
    row_list = [rows[c] for c in cpus]
    normed, res.modes = speeds.normalise(cost, row_list)
    res.speeds = speeds.finding(row_list, res.modes, res.higher_is_better)
    d_all = loo_log_ratios(normed)
    sigma = noise_scale(d_all)
    # A round in which the other CPUs ran far above their own level while this one ran at its own
    # says nothing of this CPU (its ratio fell because they rose): left out of its test. A CPU ten
    # times slower beside a competitor was called intermittent from 3 such rounds.
    others = others_disturbed(normed, scale_floor=sigma, min_effect=config.min_effect)
    d = np.where(others, np.nan, d_all)
    shown = 1.0 / cost if res.higher_is_better else cost  # medians in the metric's own values
    value_cis, d_cis = row_cis(shown), row_cis(d)
    res.noise = None if math.isnan(sigma) else sigma
    scale = sigma if not math.isnan(sigma) and sigma > 0 else math.inf  # no noise: no outliers
    blocks = timeline.split_blocks(block_of, config.blocks_used)
    kept = d.copy()  # the block test leaves out a CPU's extra rounds, as its round test does
    tested: list[tuple[CpuRow, dict, int]] = []
    for cpu in cpus:
        row, i = rows[cpu], ci_[cpu]
        if row.runs == 0:
            row.verdict = "failed"
            continue
        x, dr = shown[i], d[i]
        row.median, row.ci = float(np.median(x[~np.isnan(x)])), value_cis[i]
        have = ~np.isnan(dr)
        if not have.any():
            row.verdict = "not tested"  # never ran in a round with another CPU
            continue
        rnds = tuple(rounds[j] for j in np.flatnonzero(have))
        row.others_out = tuple(rounds[j] for j in np.flatnonzero(others[i]))
        sets = _test(row, dr[have], rnds, d_cis[i], scale, config, res.higher_is_better)
        sets["have"] = rnds
        kept[i, [ri[r] for r in sets["extra"]]] = np.nan
        tested.append((row, sets, i))
    lv, lv_all = timeline.levels(kept, blocks), timeline.levels(d, blocks)
    bps, _, s_block, df = timeline.block_test(lv, kept, blocks, math.log1p(config.min_effect))
    multi = lv.shape[1] >= 2
    # the block test where the scan shows CPU states that hold; where it shows none, rounds are
    # independent draws and the round rule's sign test (exact, no symmetry assumed) is the test
    res.block_margin = multi and _states_hold(bps, lv, kept, blocks, times, rounds, config)
    for row, _, i in tested:
        row.block_levels = tuple(None if math.isnan(v) else float(math.expm1(v)) for v in lv_all[i])
        if res.block_margin:
            row.p_value = bps[i]
    m = len(tested)
    for (row, _, _), p in zip(tested, holm([r.p_value for r, _, _ in tested])):
        row.p_adjusted = p
    found = [i for row, _, i in tested if row.p_adjusted < config.alpha]
    decided: dict[int, dict] = {}
    if level is not None:
        decided = _repeated(tested, lv, s_block, df, level, config.min_effect, res.higher_is_better)
        found = [i for row, _, i in tested if decided[row.cpu]["decision"] == looks.SLOW]
    res.timeline = timeline.hold(kept, blocks, times, lv, found, rounds)
    paused = timeline.after_pause(blocks, times)
    for row, sets, i in tested:
        block_sets = _block_sets(lv[i], lv_all[i], s_block, df, config, max(m, 1))
        mine = [blocks[ri[r]] for r in sets["have"]]
        sets["lead"] = timeline.leading(sets["have"], mine, paused, set(row.normal))
        _classify(row, sets, block_sets, config, res.timeline.tells if multi else False,
                  None if level is None else decided[row.cpu]["decision"] == looks.SLOW)
        if row.verdict in ("intermittent", "disturbed"):
            sel = [d[i, ri[r]] for r in row.disturbed]
            res.disturbances.append(Disturbance(row.cpu, row.disturbed, math.exp(float(np.median(sel))),
                                                row.verdict == "intermittent"))
    res.cpus = row_list
    res.slow = slow_cores(res.cpus)
    live = [ci_[c] for c in cpus if rows[c].runs]
    if len(live) >= 2:
        stat, p, n = friedman(normed[live])
        res.friedman = {"statistic": stat, "p_value": p, "rounds": n, "cpus": len(live)}
    if level is not None:
        res.sequential = {"cpus": decided}  # the look's design is added by the caller (looks.as_dict)
    elif tested:
        res.mde, res.mde_why = (_block_detectable(lv, s_block, df, config, m) if res.block_margin
                                else detectable_of(d, config))
    else:
        res.mde_why = "no CPU could be tested (fewer than 2 CPUs with successful runs in a round)"
    if config.counters:
        per_cpu_counters(res, [(int(p["cpu"]), r.counters) for p, r in runs
                               if int(p["round"]) >= 0 and cost_of(wl, r)[0] is not None])
    _below_mde(res)
    for r in res.cpus:
        if r.others_out and r.verdict in ("slow", "unresolved", "intermittent", "contention"):
            res.notes.append(f"CPU {r.cpu}: {rounds_text(r.others_out)} left out of its test: the other CPUs ran far "
                             f"above their own level there while CPU {r.cpu} ran at its own, which says nothing of it")
    for r in res.cpus:
        if r.verdict == "slow" and r.pause_rounds:
            res.notes.append(f"CPU {r.cpu} ran at the others' level in {rounds_text(r.pause_rounds)}, the first "
                             f"rounds after a pause between blocks, and slower in the rest: whatever slows it was away for a moment after each pause (a competitor "
                             f"that slept while the machine idled, say)")
    res.verdict = compose_verdict(res)
    return res


def _test(row: CpuRow, vals, rnds: tuple[int, ...], c: CI, scale: float, config: Any,
          higher_is_better: bool) -> dict[str, tuple[int, ...]]:
    """Fill a CPU's ratio, change, rounds and sign-test p from its per-round log-ratios; return
    its round sets (detect.round_sets) as round numbers."""
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


def _repeated(tested, lv, scale: float, df: float, level: float, min_effect: float,
              higher_is_better: bool) -> dict[int, dict]:
    """CPU -> its repeated interval at ``level`` and decision (looks.interval, looks.decision); the
    row's ratio CI becomes that interval, the one its verdict rests on."""
    out = {}
    for row, _, i in tested:
        iv = looks.interval(lv[i], scale, df, level)
        if iv is None:
            out[row.cpu] = {"decision": "", "ratio": None, "low": None, "high": None, "min_effect": min_effect}
            continue
        ratio, low, high = iv
        row.ratio_ci = CI(low, high, level)
        row.change_ci = as_change_ci(row.ratio_ci, higher_is_better)
        out[row.cpu] = {"decision": looks.decision(ratio, low, high, min_effect), "ratio": ratio, "low": low,
                        "high": high, "min_effect": min_effect}
    return out


def _block_sets(lv, lv_all, s_block: float, df: float, config: Any, m: int) -> dict[str, Any]:
    """Per block of one CPU: is it slower there (above the rest, and not below min_effect and
    clearly below its own mean level; in all blocks but 1 - persistence of them), and is it clearly slow there on its
    own (its level over the block-level SD, Student's t at alpha / (CPUs x blocks), and at least
    min_effect): contention in that stretch."""
    import numpy as np
    from scipy.special import stdtr

    have = [b for b in range(lv.size) if not math.isnan(lv[b])]
    mean = float(np.mean([lv[b] for b in have])) if have else math.nan
    drop = BLOCK_DROP * s_block if not math.isnan(s_block) else math.inf
    # slower than the rest in every block, and not back near the others' level there (below
    # min_effect and clearly below its own mean); with many blocks, in all but 1 - persistence
    # of them, as for rounds
    low = math.log1p(config.min_effect)
    short = sum(lv[b] <= 0 or (lv[b] < low and lv[b] < mean - drop) for b in have)
    # a block whose every round was an outlier above its usual level says nothing of that level;
    # it is judged on all its rounds: slower there unless below min_effect (a CPU 10x slower
    # beside a real-time competitor, its rounds outliers in a block, was called intermittent)
    gone = [b for b in range(lv.size) if math.isnan(lv[b]) and not math.isnan(lv_all[b])]
    short += sum(lv_all[b] < low for b in gone)
    every = bool(have) and short <= allowed(len(have) + len(gone), config.persistence)
    clear = []
    lv = lv_all  # contention is judged on every round, outliers included
    for b in sorted(have + gone):
        # the block level against the block-to-block spread (states of the moment included), at
        # alpha / (CPUs x blocks)
        p = float(stdtr(max(df, 1.0), -lv[b] / s_block)) if not math.isnan(s_block) and s_block > 0 else 1.0
        if lv[b] >= math.log1p(config.min_effect) and p <= config.alpha / (m * max(len(have), 1)):
            clear.append(b)
    return {"every": every, "clear": tuple(clear), "blocks": len(have) + len(gone)}


def _classify(row: CpuRow, sets: dict[str, tuple[int, ...]], bs: dict[str, Any], config: Any,
              tells: bool, shown_slow: bool | None = None) -> None:
    """slow, unresolved, contention, intermittent, disturbed, uneven or not significant (study.py).
    ``shown_slow``: --until-decided's decision in place of the Holm test (looks.py)."""
    big = row.ratio >= 1 + config.min_effect
    significant = (row.p_adjusted < config.alpha if shown_slow is None else shown_slow) and big
    # rounds that open a block after a pause, back at the others' level while the CPU is slower in
    # the rest of every block, are a moment of the pause, not of the CPU: left out of its
    # persistence (a CPU ten times slower beside a real-time competitor that slept through each
    # pause ran at full speed in the first rounds after it, and was called intermittent)
    lead = sets.get("lead", ())
    persistent = len(row.normal) - len(lead) <= allowed(row.rounds - len(lead), config.persistence)
    if significant and persistent and bs["every"]:
        # a slow core is claimed only where its ratio's interval, at the level asked, holds no
        # "no change": else the sentence would claim more than its own table shows
        c = row.ratio_ci
        shown = c is not None and c.level >= 1 - config.alpha and c.low > 1
        row.verdict = "slow" if tells and shown else "unresolved"
        row.pause_rounds = tuple(lead)
        if tells and not shown:
            row.why = (f"its ratio's interval [{c.low:.3g}, {c.high:.3g}] ({c.level:.0%}) holds no change"
                       if c is not None and c.level >= 1 - config.alpha else
                       f"{row.rounds} rounds give its ratio no interval at {1 - config.alpha:.0%}")
            row.why += "; scan with more rounds (--rounds 12 or more)"
        row.disturbed = sets["extra"]
    elif bs["clear"] and not bs["every"]:
        row.verdict = "contention"
        row.slow_blocks = bs["clear"]
    elif big and not significant and not row.normal and 2 * len(sets["clear"]) > row.rounds:
        # clearly slower in most rounds and never back at the others' level, but too few rounds
        # for its test: neither a slow core nor interference that came and went
        row.verdict = "unresolved"
        row.why = (f"slower in {row.slower_rounds} of {row.rounds} rounds, too few for its test (p = "
                   f"{row.p_adjusted:.2g}); scan with more rounds (--rounds 12 or more)")
    elif (significant and not persistent) or (big and 2 * len(sets["clear"]) > row.rounds):
        # slower, but back at the others' level in many rounds; or clearly slower (each round an
        # outlier on its own) in most rounds, which noise alone does not do
        row.verdict = "intermittent"
        row.slow_rounds = row.disturbed = sets["high"]
    elif sets["clear"]:
        row.verdict, row.disturbed = "disturbed", sets["clear"]
    elif significant:
        row.verdict = "uneven"  # slower over the scan, but not in every block
    else:
        row.verdict = "not significant"


def others_disturbed(normed, scale_floor: float, min_effect: float):
    """(CPUs x rounds) mask: the median of the other CPUs' costs against their own level is an
    outlier (modified Z > 3.5 on the pooled robust spread of every CPU's costs around its own
    median, and at least min_effect) in a round where this CPU ran at its own level."""
    import numpy as np

    lg = np.log(normed)
    have = ~np.isnan(lg)
    r = lg - np.nanmedian(np.where(have.any(axis=1, keepdims=True), lg, 0), axis=1, keepdims=True)
    dev = np.abs(r[have])
    s = 1.4826 * float(np.median(dev)) if dev.size else 0.0
    s = max(s, scale_floor if not math.isnan(scale_floor) else 0.0, 1e-12)
    m = lg.shape[0]
    out = np.zeros(lg.shape, dtype=bool)
    if m < 2:
        return out
    cut = max(OUTLIER_Z * s, math.log1p(min_effect))
    for i in range(m):
        rest = np.delete(r, i, axis=0)
        ok = (~np.isnan(rest)).any(axis=0)
        mid = np.full(lg.shape[1], np.nan)
        mid[ok] = np.nanmedian(rest[:, ok], axis=0)
        own = r[i]
        out[i] = ok & (mid > cut) & (np.abs(np.nan_to_num(own, nan=np.inf)) <= OUTLIER_Z * s)
    return out


def _row(cpu: int, topology: Topology | None) -> CpuRow:
    """A CPU's table row with its place in the topology (its own core where that is unknown)."""
    info = next((c for c in topology.cpus if c.id == cpu), None) if topology is not None else None
    return CpuRow(cpu, info.socket, info.core, info.node, tuple(info.siblings)) if info else CpuRow(cpu, 0, cpu, 0, (cpu,))


def _states_hold(ps, lv, kept, blocks, times, rounds, config: Any) -> bool:
    """Does the scan show per-CPU states that hold: its round-to-round correlation, or its
    block-to-block rank correlation over the CPUs the block test (p-values ps) does not find, is
    significant (timeline.hold)? Where too little to tell, taken as yes."""
    import numpy as np

    found = [i for i, p in enumerate(holm(ps)) if p < config.alpha]
    pre = timeline.hold(kept, blocks, times, lv, found, rounds)
    return pre.hold_s is not None or pre.held or pre.round_corr is None or bool(np.isnan(lv).all())


def _block_detectable(lv, s_block: float, df: float, config: Any, m: int) -> tuple[float, str]:
    """(smallest slowdown the block test detects, why it is inf when it is)."""
    import numpy as np

    nb = int(np.median((~np.isnan(lv)).sum(axis=1)))
    mean = np.nanmean(np.where(np.isnan(lv).all(axis=1, keepdims=True), 0, lv), axis=1, keepdims=True)
    resid = (lv - mean).ravel()
    mde = block_detectable(resid, nb, s_block, df, config.alpha / max(m, 1), config.min_effect,
                           config.persistence, config.seed)
    if mde != math.inf:
        return mde, ""
    if m < 2 or df <= 0:
        return mde, "fewer than 2 CPUs with successful runs in 2 blocks"
    more = ("raise --rounds (a block needs 2 rounds, so --rounds caps the blocks)" if config.blocks_used < config.blocks
            else "raise --blocks")
    return mde, (f"too noisy from block to block ({s_block:.1%} SD of a CPU's block level, {nb} blocks): not "
                 f"even +300% is called slow in 90% of simulated scans; {more} or quiet the machine")


def detectable_of(d, config: Any) -> tuple[float, str]:
    """(smallest slowdown the round rule detects under the noise of d, why it is inf when it
    is): detect.detectable on the residuals of every CPU's log-ratios around its own median."""
    import numpy as np

    live = d[~np.isnan(d).all(axis=1)]
    n = int(np.median((~np.isnan(live)).sum(axis=1))) if live.size else 0
    m = max(live.shape[0], 1)
    sigma = noise_scale(live) if live.size else math.nan
    if math.isnan(sigma):
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


def _below_mde(res: CoresResult) -> None:
    """A CPU named slow below the smallest detectable slowdown gets a line saying why that is
    no contradiction: that size is found in some scans, not in 90 % of them."""
    if res.mde is None or res.mde == math.inf:
        return
    for r in res.cpus:
        if r.verdict in ("slow", "unresolved") and r.ratio is not None and r.ratio - 1 < res.mde:
            res.notes.append(
                f"CPU {r.cpu} is slower by {r.ratio - 1:.1%} (cost ratio), below the {res.mde:.1%} this scan detects "
                f"in 90% of simulated scans: a slowdown this size is found in some scans, not most; this one "
                f"passed the same test (p = {r.p_adjusted:.2g}, slower in every block)")
