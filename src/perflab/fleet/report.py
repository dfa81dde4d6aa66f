"""The fleet report: hosts grouped by platform, per-platform throughput, slow nodes, missing ones.

Slow nodes: within one platform, each host's throughput sample against its platform peers
(perflab.stats.peers: Mann-Whitney U, Holm over every host tested, ratio of medians with a
distribution-free interval, a minimum effect). A host is compared only with hosts of its own
platform: a slower CPU generation is a platform, not a slow node.
"""

from __future__ import annotations

from typing import Any

from perflab.errors import PerflabError
from perflab.fleet import state
from perflab.fleet.headline import host_data, platform_key, platform_of
from perflab.fleet.timing import apart_from, one_per_node, platform_windows
from perflab.stats.peers import median_ci, slow_members


def _hosts(store) -> dict[int, dict]:
    """Every host row in one query (a fleet may have thousands)."""
    import sqlalchemy as sa

    h = store.t["hosts"]
    with store.engine.connect() as conn:
        rows = conn.execute(sa.select(h.c.id, h.c.hostname, h.c.metadata, h.c.topology)).all()
    return {r.id: {"hostname": r.hostname, "metadata": r.metadata or {}, "topology": r.topology or {}}
            for r in rows}


def _spread(values: list[float]) -> dict[str, Any]:
    import numpy as np

    arr = np.asarray(values, dtype=float)
    # The order-statistic interval with the level it reaches (3 hosts: 75 %), not a bootstrap's 95 %.
    lo, hi, level = median_ci(values, 0.95) if arr.size >= 2 else (float(arr[0]), float(arr[0]), 0.0)
    p10, p25, p75, p90 = (float(x) for x in np.quantile(arr, [0.1, 0.25, 0.75, 0.9]))
    return {"median": float(np.median(arr)),
            "ci": {"low": lo, "high": hi, "level": round(level, 4)} if arr.size >= 2 else None,
            "spread": {"min": float(arr.min()), "p10": p10, "p25": p25, "p75": p75, "p90": p90,
                       "max": float(arr.max()), "iqr_pct": 100.0 * (p75 - p25) / float(np.median(arr))
                       if np.median(arr) else None}}


def build(store, fleet: state.Fleet, submitter, alpha: float = 0.05, min_effect: float = 0.03) -> dict[str, Any]:
    """The report as the JSON shape of `fleet report --json`."""
    hosts_rows = _hosts(store)
    by_slot = state.task_campaigns(store, fleet)
    slots = state.slot_states(store, fleet, submitter, hosts_rows, by_slot)
    campaigns = {c.id: c for cs in by_slot.values() for c in cs}
    done = [campaigns[s.campaign_id] for s in slots if s.state == "done" and s.campaign_id in campaigns]
    data = host_data(store, done)
    hosts, missing = [], []
    groups: dict[str, dict[str, list[float]]] = {}
    platforms: dict[str, dict[str, Any]] = {}
    medians: dict[str, list[float]] = {}
    stands_for, repeats = one_per_node(slots)
    windows: dict[str, dict[str, tuple]] = {}
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
        if s.state == "done":
            if camp is not None:
                windows.setdefault(key, {})[host] = (camp.started, camp.finished)
            hd = data.get(s.campaign_id)
            entry["headline"] = hd.headline if hd else None
            if hd and hd.values:
                groups.setdefault(key, {})[host] = hd.values
                if hd.headline.get("median") is not None:
                    medians.setdefault(key, []).append(hd.headline["median"])
                elif hd.headline.get("throughput") is not None:
                    medians.setdefault(key, []).append(hd.headline["throughput"])
            platforms.setdefault(key, {"platform": key, **plat, "hosts": []})["hosts"].append(host)
        else:
            entry["error"] = s.reason
            entry["log"] = s.log
        hosts.append(entry)
    tests = slow_members(groups, alpha=alpha, min_effect=min_effect) if groups else []
    tested = sum(1 for t in tests if t.p_value is not None)
    slow = []
    times = {key: platform_windows(w) for key, w in windows.items()}
    for t in sorted((t for t in tests if t.slow), key=lambda t: t.ratio):
        apart = apart_from(t.member, windows[t.group]) if not times[t.group]["same_time"] else 0
        slow.append({
            "host": t.member, "platform": t.group, "ratio": t.ratio,
            "ci": {"low": t.low, "high": t.high, "level": round(t.level, 4)},
            "median": t.median, "peers_median": t.peers_median, "n": t.n,
            "p_value": t.p_value, "p_holm": t.p_adjusted,
            "evidence": (f"Mann-Whitney U against {len(groups[t.group]) - 1} peers of its platform, "
                         f"Holm-corrected over {tested} hosts (p {t.p_adjusted:.2g} < {alpha}); "
                         f"throughput {1 - t.ratio:.1%} below the peers' median, beyond the "
                         f"minimum effect {min_effect:.0%}"
                         + (f"; measured in a window disjoint from {apart} of its {len(groups[t.group]) - 1} "
                            "peers', so part of the difference may be the time, not the node" if apart else "")),
        })
    for key, plat in platforms.items():
        ms = medians.get(key) or []
        plat["n_hosts"] = len(plat["hosts"])
        plat["quantity"] = next((h["headline"]["quantity"] for h in hosts
                                 if h["platform"] == key and h.get("headline")), None)
        plat.update(_spread(ms) if ms else {"median": None, "ci": None, "spread": None})
        plat["slow_hosts"] = [s["host"] for s in slow if s["platform"] == key]
        plat["not_tested"] = [t.member for t in tests if t.group == key and t.p_value is None]
        plat["same_time"] = times.get(key, {}).get("same_time", True)
        plat["time_note"] = times.get(key, {}).get("note")
    rep = {"fleet": fleet.name, "hosts": hosts, "platforms": list(platforms.values()),
           "slow_hosts": slow, "missing": missing}
    if fleet.study == "cores":
        # Seed 001 at farm level: each host's own cores verdict (its CPUs against each other),
        # listed per host; a slow host and a slow core are separate questions.
        rep["slow_cores"] = [{"host": h["host"], "platform": h["platform"], **c} for h in hosts
                             if h["status"] == "done" and h.get("headline")
                             for c in h["headline"].get("slow_cores") or []]
    return rep


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
