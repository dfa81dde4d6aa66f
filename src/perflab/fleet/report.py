"""The fleet report: hosts grouped by platform, per-platform throughput, slow nodes, missing ones.

Slow nodes: within one platform, each host against its platform peers. A host is compared only
with hosts of its own platform: a slower CPU generation is a platform, not a slow node. Two
tests, by the fleet's size (``RUNS_LIMIT`` values in all):

- runs (up to the limit): every run of every host in memory, each host's sample against the
  pooled runs of its peers (perflab.stats.peers: Mann-Whitney U, Holm over every host tested,
  ratio of medians with a distribution-free interval, a minimum effect);
- medians (beyond it): the per-host summaries the store computes (store/summaries.py), each
  host's median against the median of its peers' medians (perflab.stats.peer_medians: the same
  ratio and interval construction; a sign test of the candidates' runs, read back alone,
  Bonferroni over every host tested). Memory grows with the hosts, not the runs.
"""

from __future__ import annotations

import math
from typing import Any

from perflab.errors import PerflabError
from perflab.fleet import state
from perflab.fleet.headline import (HostData, _ci, _selection, campaign_runs, host_data, host_summaries,
                                    platform_key, platform_of)
from perflab.fleet.timed import time_note, time_summary, timed_runs
from perflab.fleet.timing import apart_from, one_per_node, platform_windows, rounds_same_time, visits_per_node
from perflab.stats import median
from perflab.stats.peer_medians import MemberSummary, slow_by_medians
from perflab.stats.peers import median_ci, slow_members
from perflab.stats.time_blocks import TimedRuns, slow_by_time

# Values a report ranks in memory (the runs test peaked at 412 MiB for 1.8 million values and 2 GiB
# for 10 million); a larger fleet is compared by its hosts' medians. 1,000 hosts x 1,000 runs
# still take the pooled test.
RUNS_LIMIT = 1_000_000
HISTOGRAM_BINS = 40


def _hosts(store) -> dict[int, dict]:
    """Every host row in one query (a fleet may have 100,000), with only what platform_of reads:
    the database picks the fields out of each host's metadata, and a topology (the same text
    for every host of a platform) is decoded once."""
    import functools
    import json

    import sqlalchemy as sa

    h = store.t["hosts"]
    meta = h.c.metadata
    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(
            h.c.id, h.c.hostname, meta["cpu_model"].as_string(), meta["mem_total_bytes"].as_float(),
            meta["kernel"]["release"].as_string(), meta["kernel"].as_string(),
            meta["logical_cpus_in_cpuinfo"].as_integer(), sa.cast(h.c.topology, sa.Text))).all()
    topology = functools.lru_cache(maxsize=None)(lambda text: json.loads(text) if text else {})
    out = {}
    for hid, name, cpu, mem, release, kernel, cpus, topo in rows:
        md = {"cpu_model": cpu, "mem_total_bytes": mem, "kernel": release or kernel,
              "logical_cpus_in_cpuinfo": cpus}
        out[hid] = {"hostname": name, "metadata": {k: v for k, v in md.items() if v is not None},
                    "topology": topology(topo)}
    return out


def _spread(values: list[float]) -> dict[str, Any]:
    """The host medians of a platform: their median with its order-statistic interval, quantiles,
    and a histogram (what the HTML page draws instead of one row per host)."""
    import numpy as np

    arr = np.asarray(values, dtype=float)
    ci = None
    if arr.size >= 2:
        lo, hi, level = median_ci(arr, 0.95)  # type: ignore[arg-type]  # an array serves as the sequence
        ci = {"low": lo, "high": hi, "level": round(level, 4)}
    p10, p25, p75, p90 = (float(x) for x in np.quantile(arr, [0.1, 0.25, 0.75, 0.9]))
    med = float(np.median(arr))
    counts, edges = np.histogram(arr, bins=min(HISTOGRAM_BINS, max(1, arr.size)))
    return {"median": med, "ci": ci,
            "spread": {"min": float(arr.min()), "p10": p10, "p25": p25, "p75": p75, "p90": p90,
                       "max": float(arr.max()), "iqr_pct": 100.0 * (p75 - p25) / med if med else None},
            "histogram": {"edges": [float(e) for e in edges], "counts": [int(c) for c in counts]}}


def _figures(store, done: list, method: str) -> tuple[dict, bool, Any]:
    """(campaign id -> HostData, whether the runs test applies, reader of one campaign's runs)."""
    if not done or done[0].study in ("instances", "score"):
        # An instances or score host's sample is a few repetitions in its campaign's summary: no runs to spare.
        return host_data(store, done), True, None
    data, metric, labels = host_summaries(store, done)
    total = sum(d.summary.n for d in data.values() if d.summary is not None)
    if method == "runs" or (method == "auto" and total <= RUNS_LIMIT):
        return host_data(store, done), True, None
    return data, False, lambda camp: campaign_runs(store, camp, metric, labels)


def _evidence(t, by_runs: bool, peers: int, tested: int, alpha: float, min_effect: float,
              mode: str | None = None) -> str:
    if mode == "together":
        rs, parts = t.block_ratios, ", ".join(f"{r:.2f}" for r in t.part_ratios)
        against = ("over the blocks, its standard error their noise plus the spread of its peers' levels"
                   + (" (the larger part: states that lasted the window)" if t.held else ""))
        test = (f"below the median of its {peers} peers of its platform in each third of the window they ran in "
                f"together ({parts}) and in {t.blocks_below} of {len(rs)} time blocks (block ratios "
                f"{min(rs):.2f}-{max(rs):.2f}); one-sided t-test {against}, Holm-corrected over {tested} hosts "
                f"(p {t.p_adjusted:.2g} < {alpha})")
    elif mode == "rounds":
        rs = ", ".join(f"{r:.2f}" for r in t.block_ratios)
        where = (f"in each of {len(t.block_ratios)} rounds of visits (round ratios {rs})"
                 if len(t.part_ratios) == len(t.block_ratios) else
                 f"in each third of {len(t.block_ratios)} rounds of visits (thirds "
                 f"{', '.join(f'{r:.2f}' for r in t.part_ratios)}; round ratios {rs})")
        test = (f"below the median of its {peers} peers of its platform {where}; one-sided t-test over the rounds, its standard error their "
                f"round-to-round spread, Holm-corrected over {tested} hosts (p {t.p_adjusted:.2g} < {alpha})")
    elif mode == "window":
        test = (f"Mann-Whitney U of its runs inside the window its platform ran in together against its {peers} "
                f"peers' runs there, Holm-corrected over {tested} hosts (p {t.p_adjusted:.2g} < {alpha})")
    elif mode == "apart":
        test = (f"its level against the levels of {peers} peers of its platform measured in other windows "
                f"(prediction t-test, Holm-corrected over {tested} hosts, p {t.p_adjusted:.2g} < {alpha}); part "
                "of the difference may be the time, not the node")
    elif by_runs:
        test = (f"Mann-Whitney U against {peers} peers of its platform, Holm-corrected over {tested} hosts "
                f"(p {t.p_adjusted:.2g} < {alpha})")
    else:
        test = (f"sign test of its {t.n} runs against the median of the medians of {peers} peers of its "
                f"platform, Bonferroni-corrected over {tested} hosts (p {t.p_adjusted:.2g} < {alpha})")
    return (f"{test}; throughput {1 - t.ratio:.1%} below the peers' median, beyond the minimum effect "
            f"{min_effect:.0%}")


def _peers(tests: list, groups: dict, group: str, mode: dict) -> int:
    """How many peers a host of ``group`` was compared with: the hosts tested beside it where the
    time judgement left some out (a host that ran before the others started), else all."""
    if mode.get(group):
        return sum(1 for t in tests if t.group == group and t.level is not None) - 1
    return len(groups[group]) - 1


def _by_time(store, done: list, groups: dict, owner: dict) -> dict | None:
    """Each platform's hosts as runs on one time axis (fleet/timed.py), or None where a compared
    host's runs carry no times (the pooled runs test then compares whole campaigns)."""
    if done[0].study not in ("run", "cores"):
        return None
    metric, labels = _selection(store, done)
    runs = timed_runs(store, [owner[(g, h)][0] for g, hs in groups.items() for h in hs], metric, labels)
    out: dict = {}
    for g, hs in groups.items():
        for h in hs:
            r = runs.get(owner[(g, h)][0].id)
            if r is None:
                return None
            out.setdefault(g, {})[h] = r
    return out


def _by_round(data: dict, groups: dict, owner: dict, round_of: dict[str, int]) -> dict:
    """Each platform's hosts as their visits' values, each with its visit's round (a round is a
    comparison of its own: the times inside it are not needed)."""
    out: dict = {}
    for g, hs in groups.items():
        for h in hs:
            vals: list[float] = []
            rounds: list[int] = []
            for c in owner[(g, h)]:
                v = data[c.id].values if c.id in data else []
                vals += v
                rounds += [round_of.get(str(c.labels.get("fleet_slot")), 0)] * len(v)
            out.setdefault(g, {})[h] = TimedRuns([0.0] * len(vals), [0.0] * len(vals), vals, rounds)
    return out


def _pooled(data: dict, camps: list) -> HostData | None:
    """One host's figures from its visits' campaigns: their values together, the headline of
    them all (in medians mode: the median of the visits' medians, the widest of their intervals)."""
    hds = [data[c.id] for c in camps if c.id in data]
    if not hds:
        return None
    if len(hds) == 1:
        return hds[0]
    values = [v for hd in hds for v in hd.values]
    head = dict(hds[-1].headline)
    sums = [hd.summary for hd in hds if hd.summary is not None]
    summary = None
    if values:
        head.update(median=median(values), ci=_ci(values), n=len(values))
    elif sums:
        lows = [s.ci975[0] for s in sums if s.ci975]
        highs = [s.ci975[1] for s in sums if s.ci975]
        summary = MemberSummary(sum(s.n for s in sums), median([s.median for s in sums]),
                                min(lows) if lows else None, max(highs) if highs else None)
        head.update(median=summary.median, n=summary.n, ci=None)
    return HostData(values, head, summary)


def build(store, fleet: state.Fleet, submitter, alpha: float = 0.05, min_effect: float = 0.03,
          method: str = "auto") -> dict[str, Any]:
    """The report as the JSON shape of `fleet report --json`; ``method``: auto, runs or medians."""
    if method not in ("auto", "runs", "medians"):
        raise ValueError(f"method must be auto, runs or medians, not {method!r}")
    hosts_rows = _hosts(store)
    by_slot = state.task_campaigns(store, fleet)
    slots = state.slot_states(store, fleet, submitter, hosts_rows, by_slot)
    campaigns = {c.id: c for cs in by_slot.values() for c in cs}
    done = [campaigns[s.campaign_id] for s in slots if s.state == "done" and s.campaign_id in campaigns]
    data, by_runs, read_runs = _figures(store, done, method)
    hosts, missing = [], []
    groups: dict[str, dict[str, Any]] = {}
    owner: dict[tuple[str, str], Any] = {}
    platforms: dict[str, dict[str, Any]] = {}
    medians: dict[str, list[float]] = {}
    round_of = {str(k): int(v) for k, v in (fleet.config.get("round_of") or {}).items()}
    if round_of:  # visits: a node's slots are its visits, one entry
        for s in slots:
            s.host = s.host or (fleet.nodes.get(s.slot) if s.state == "failed" else None)
        stands_for, visits = visits_per_node(slots, round_of)
        repeats: dict[str, list] = {}
    else:
        stands_for, repeats = one_per_node(slots)
        visits = {}
    windows: dict[str, dict[str, tuple]] = {}
    round_windows: dict[str, dict[int, dict[str, tuple]]] = {}
    for s in slots:
        if s.state in ("pending", "running") or (s.state == "done" and s.campaign_id is None):
            missing.append({"slot": s.slot, "status": s.state, "job": s.job, "reason": s.reason})
            continue
        camp = campaigns.get(s.campaign_id) if s.campaign_id else None
        # A campaign without a host row (its metadata could not be read) is an unknown platform.
        plat = (platform_of(hosts_rows.get(camp.host_id) if camp.host_id else None,
                            str(camp.labels.get("slurm_features") or "")) if camp else None)
        key = platform_key(plat) if plat else None
        host = s.host or f"slot {s.slot}"
        if stands_for.get(host, s.slot) != s.slot:
            continue  # one node is one host: listed under the slot that stands for it
        entry: dict[str, Any] = {"host": host, "platform": key, "status": s.state,
                                 "campaign_id": s.campaign_id, "headline": None, "slot": s.slot, "job": s.job}
        if host in repeats:
            entry["other_slots"] = [{"slot": o.slot, "status": o.state, "campaign_id": o.campaign_id}
                                    for o in repeats[host]]
        if host in visits:
            entry["visits"] = [{"slot": o.slot, "round": round_of.get(o.slot), "status": o.state, "job": o.job,
                                "campaign_id": o.campaign_id} for o in visits[host]]
        if s.state == "done":
            # A done slot's campaign is read (the **plat below relies on it): so is its platform.
            assert plat is not None and key is not None
            mine = [campaigns[o.campaign_id] for o in visits.get(host, [s])
                    if o.state == "done" and o.campaign_id in campaigns]
            for c in mine:
                if c.labels.get("fleet_slot") in round_of:
                    round_windows.setdefault(key, {}).setdefault(round_of[c.labels["fleet_slot"]], {})[host] = \
                        (c.started, c.finished)
            if mine:
                windows.setdefault(key, {})[host] = (min(c.started for c in mine),
                                                     max((c.finished or c.started) for c in mine))
            hd = _pooled(data, mine) if len(mine) > 1 else data.get(s.campaign_id)
            entry["headline"] = hd.headline if hd else None
            if hd and by_runs and hd.values:
                groups.setdefault(key, {})[host] = hd.values
                owner[(key, host)] = mine
            elif hd and not by_runs and hd.summary is not None:
                r = hd.summary
                groups.setdefault(key, {})[host] = r if isinstance(r, MemberSummary) else \
                    MemberSummary(r.n, r.median, *(r.ci975 or (None, None)))
                owner[(key, host)] = mine
            if hd and hd.values or hd and hd.summary is not None:
                if hd.headline.get("median") is not None:
                    medians.setdefault(key, []).append(hd.headline["median"])
                elif hd.headline.get("throughput") is not None:
                    medians.setdefault(key, []).append(hd.headline["throughput"])
            platforms.setdefault(key, {"platform": key, **plat, "hosts": []})["hosts"].append(host)
        else:
            entry["error"] = s.reason
            entry["log"] = s.log
        hosts.append(entry)
    judged: dict | None
    if by_runs and groups and round_of:
        judged = _by_round(data, groups, owner, round_of)
    else:
        judged = _by_time(store, done, groups, owner) if by_runs and groups else None
    # Any: TimedTests where time is judged (the only place their time fields are read), else PeerTests.
    tests: Any
    if not groups:
        tests = []
    elif judged is not None:
        tests, time_of = slow_by_time(judged, alpha=alpha, min_effect=min_effect)
    elif by_runs:
        tests = slow_members(groups, alpha=alpha, min_effect=min_effect)
    else:
        tests = slow_by_medians(groups, lambda g, h: [v for c in owner[(g, h)] for v in read_runs(c)],
                                alpha=alpha, min_effect=min_effect)
    tested = sum(1 for t in tests if t.level is not None)
    slow = []
    times = {key: platform_windows(w) for key, w in windows.items()}
    for key, rw in round_windows.items():
        # Visits: a host's span covers every round; whether they were measured together is per round.
        times[key] = {"same_time": rounds_same_time(rw), "apart": [], "note": None}
    mode = {g: time_of[g].mode for g in time_of} if judged is not None else {}
    for t in sorted((t for t in tests if t.slow), key=lambda t: t.ratio):
        apart = apart_from(t.member, windows[t.group]) if not times[t.group]["same_time"] else 0
        if mode.get(t.group) in ("together", "window", "apart", "rounds"):
            apart = 0  # its evidence says how time entered the comparison
        slow.append({
            "host": t.member, "platform": t.group, "ratio": t.ratio,
            "ci": {"low": t.low, "high": t.high, "level": round(t.level, 4)},
            "median": t.median, "peers_median": t.peers_median, "n": t.n,
            "p_value": t.p_value, "p_adjusted": t.p_adjusted, "correction": "Holm" if by_runs else "Bonferroni",
            "evidence": _evidence(t, by_runs, _peers(tests, groups, t.group, mode), tested, alpha, min_effect,
                                  mode.get(t.group))
            + (f"; measured in a window disjoint from {apart} of its {len(groups[t.group]) - 1} peers', so "
               "part of the difference may be the time, not the node" if apart else ""),
        })
    for key, plat in platforms.items():
        ms = medians.get(key) or []
        plat["n_hosts"] = len(plat["hosts"])
        plat["quantity"] = next((h["headline"]["quantity"] for h in hosts
                                 if h["platform"] == key and h.get("headline")), None)
        plat["slow_test"] = ("each host's runs against its peers' pooled runs" if by_runs else
                             "each host's median against its peers' medians")
        plat.update(_spread(ms) if ms else {"median": None, "ci": None, "spread": None, "histogram": None})
        plat["slow_hosts"] = [s["host"] for s in slow if s["platform"] == key]
        plat["not_tested"] = [t.member for t in tests if t.group == key and t.level is None]
        plat["same_time"] = times.get(key, {}).get("same_time", True)
        plat["time_note"] = times.get(key, {}).get("note")
        if judged is not None and key in time_of:
            gt = time_of[key]
            outside = sum(t.outside for t in tests if t.group == key)
            plat["time_test"] = time_summary(gt)
            plat["slow_test"] = {
                "together": "each host against its peers on runs of the same time (time blocks)",
                "window": "each host's runs against its peers' runs of the same time (pooled)",
                "apart": "each host's level against its peers' levels, measured apart",
                "rounds": "each host against its peers in each round of visits",
            }.get(gt.mode, plat["slow_test"])
            # Named only where it decided: a host above its peers is not slow either way, and a
            # twin of a slow node sees its peers differ because of that node.
            held = [t.member for t in tests if t.group == key and t.held and t.ratio is not None
                    and t.ratio <= 1.0 - min_effect and not t.slow]
            # Stand-in hosts (--host-label: array tasks) cannot be visited again: no hint to.
            note = time_note(gt, outside, held, visits=not fleet.config.get("host_label"))
            if note and times.get(key, {}).get("head"):
                note = f"{times[key]['head']}; {note}"
            plat["time_note"] = note or plat["time_note"]
            if gt.mode == "rounds":
                plat["time_test"]["visits"] = fleet.config.get("visits")
                plat["time_test"]["round_ratios"] = {t.member: [round(r, 4) for r in t.block_ratios]
                                                     for t in tests if t.group == key and t.block_ratios}
            if gt.mode == "together":
                plat["time_test"]["block_ratios"] = {t.member: [round(r, 4) for r in t.block_ratios]
                                                     for t in tests if t.group == key and t.block_ratios}
    rep = {"fleet": fleet.name, "hosts": hosts, "platforms": list(platforms.values()),
           "slow_hosts": slow, "missing": missing,
           # a platform with a host named slow has its answer, however wide its comparison
           "cannot_tell": [c for key in platforms if judged is not None and key in time_of
                           and not platforms[key].get("slow_hosts")
                           for c in [_cannot_tell(key, time_of[key], fleet)] if c]}
    if fleet.study == "cores":
        # Seed 001 at farm level: each host's own cores verdict (its CPUs against each other),
        # listed per host; a slow host and a slow core are separate questions.
        rep["slow_cores"] = [{"host": h["host"], "platform": h["platform"], **c} for h in hosts
                             if h["status"] == "done" and h.get("headline")
                             for c in h["headline"].get("slow_cores") or []]
    return rep


# The smallest slowdown a comparison names, above which its platform reads "cannot tell": a host
# at half its peers' throughput unnamed is no evidence of "no slow host".
THIN = 0.5


def _cannot_tell(platform: str, gt: Any, fleet: state.Fleet) -> dict[str, str] | None:
    """Where a platform's hosts were compared on too little to name a slow one: why, and the one
    thing to do. A headline of "no slow host" would claim what the runs cannot show."""
    visits = not fleet.config.get("host_label")
    if gt.mode == "window":
        return {"platform": platform, "why": gt.why,
                "do": "measure more runs a node (--runs) so the hosts share 2 time blocks"
                      + (", or visit the nodes in rounds (--visits 3)" if visits else "")}
    d = gt.detectable
    if gt.mode == "apart" and (d is None or math.isnan(d) or d > 0.99):
        return {"platform": platform, "why": f"judged apart ({gt.why}), where not even a slowdown of 99 % is seen",
                "do": "measure the hosts at the same time (no --max-parallel)"
                      + (" or in rounds of visits (--visits 3)" if visits else "")}
    if gt.mode in ("together", "rounds") and d is not None and d > THIN:
        # A host at half its peers' throughput would go unnamed: "no slow host" would stand on
        # nothing (a 4-node farm, one node held to 30 % of a CPU on a loaded machine: 6 s
        # together in 2 blocks, its peers' levels apart by more than the blocks' noise)
        together = "in rounds of visits" if gt.mode == "rounds" else "at the same time"
        return {"platform": platform,
                "why": f"compared {together}, but the hosts' levels moved so much that only a host "
                       f"{d:.0%} or more slower than its peers would be named",
                "do": "measure more runs a node (--runs)" + (" or more visits (--visits 6)" if visits else "")}
    return None


def platform_throughput(store, name: str, match: str | None = None) -> tuple[float, str, int]:
    """(median host throughput, platform, hosts) of a fleet's platform: `perflab cost`'s input.

    ``match`` picks the platform when the fleet spans several: by its Slurm feature exactly
    (``A`` of nodes with Feature=A), else by a case-insensitive part of its description (CPU model).
    """
    rep = build(store, state.load(store, name), None)
    plats = [p for p in rep["platforms"] if p.get("median") is not None]
    if match:
        # A feature named exactly wins: 'A' is also a part of every 'AMD EPYC' description.
        exact = [p for p in plats if match in (p.get("features") or "").split(",")]
        plats = exact or [p for p in plats if match.lower() in p["platform"].lower()]
    if len(plats) != 1:
        known = "; ".join(p["platform"] for p in rep["platforms"]) or "none with finished hosts"
        what = f"match {match!r}" if match else "measured; give fleet_platform to pick one"
        raise PerflabError(f"fleet {name}: {len(plats)} platform(s) {what}; its platforms: {known}")
    p = plats[0]
    return float(p["median"]), p["platform"], int(p["n_hosts"])
