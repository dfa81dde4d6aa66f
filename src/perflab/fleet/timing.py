"""When the hosts of a comparison were measured, and one entry per node.

A slow-node test compares a host's runs with its peers' runs. Measured at the same time, what
changes on the machine room's side (the load of a machine test nodes share, cooling, shared
storage) falls on every host alike; measured in disjoint windows (--max-parallel, a resubmitted
slot, a queue that ran them apart) it falls on some and not others, and the test cannot tell it
from the node. The windows are the campaigns' start and end; n intervals all overlap exactly
when the latest start is before the earliest end (Helly, in one dimension), so a platform of any
size is checked in one pass.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

_LISTED = 6  # windows named in a note; beyond, a count


def _hm(t: datetime) -> str:
    return t.strftime("%H:%M:%S")


def platform_windows(windows: dict[str, tuple[datetime, datetime | None]]) -> dict[str, Any]:
    """Per platform: whether its hosts were all measured at once, which were not, and a note
    saying what that costs the comparison (None when they were)."""
    spans = {h: (s, e or s) for h, (s, e) in windows.items() if s is not None}
    if len(spans) < 2:
        return {"same_time": True, "apart": [], "note": None}
    latest_start = max(s for s, _ in spans.values())
    earliest_end = min(e for _, e in spans.values())
    if latest_start <= earliest_end:
        return {"same_time": True, "apart": [], "note": None}
    # A host apart: its window misses at least one peer's entirely.
    apart = sorted(h for h, (s, e) in spans.items() if s > earliest_end or e < latest_start)
    order = sorted(spans, key=lambda h: spans[h][0])
    named = ", ".join(f"{h} {_hm(spans[h][0])}-{_hm(spans[h][1])}" for h in order[:_LISTED])
    more = f" and {len(order) - _LISTED} more" if len(order) > _LISTED else ""
    head = (f"not measured at the same time: {len(apart)} of {len(spans)} hosts ran in a window disjoint "
            f"from a peer's ({named}{more})")
    note = (f"{head}; a difference between them includes whatever changed between "
            "those windows (other load on a machine the nodes share, cooling, shared storage), which the "
            "test cannot tell from the node; measured at once (no --max-parallel) that part falls on every "
            "host alike")
    return {"same_time": False, "apart": apart, "note": note, "head": head}


def apart_from(host: str, windows: dict[str, tuple[datetime, datetime | None]]) -> int:
    """How many of ``host``'s peers were measured in a window disjoint from its own."""
    if host not in windows:
        return 0
    s, e = windows[host]
    e = e or s
    return sum(1 for h, (ps, pe) in windows.items() if h != host and (ps > e or (pe or ps) < s))


def one_per_node(slots: list) -> tuple[dict[str, str], dict[str, list]]:
    """(host -> the slot that stands for it, host -> its other slots): one node is one host.

    Two slots ran on one node only where the fleet's nodes were not pinned (a job array of an
    older fleet, a node taken back by a resubmission): the node's entry is its latest finished
    campaign (else its latest slot); the others are listed with it, not compared.
    """
    keep: dict[str, Any] = {}
    others: dict[str, list] = {}
    for s in slots:
        if s.state in ("pending", "running") or (s.state == "done" and s.campaign_id is None) or not s.host:
            continue
        cur = keep.get(s.host)
        rank = (s.state == "done", s.campaign_id or 0)
        if cur is None:
            keep[s.host] = s
            continue
        if rank > (cur.state == "done", cur.campaign_id or 0):
            keep[s.host], s = s, cur
        others.setdefault(s.host, []).append(s)
    return {h: s.slot for h, s in keep.items()}, others


def visits_per_node(slots: list, round_of: dict[str, int]) -> tuple[dict[str, str], dict[str, list]]:
    """(host -> the slot that stands for it, host -> its visits as slots, in round order): a fleet
    that measured each node in several visits (``round_of``: slot -> round) has one entry per
    node, its visits together; the slot standing for it is its first finished visit (so the
    nodes are listed in the order of their first round), else its latest visit."""
    mine: dict[str, list] = {}
    for s in slots:
        if s.state in ("pending", "running") or (s.state == "done" and s.campaign_id is None) or not s.host:
            continue
        mine.setdefault(s.host, []).append(s)
    keep = {}
    for host, ss in mine.items():
        ss.sort(key=lambda s: round_of.get(s.slot, 0))
        done = [s for s in ss if s.state == "done"]
        keep[host] = done[0].slot if done else ss[-1].slot
    return keep, mine


def rounds_same_time(windows: dict[int, dict[str, tuple[datetime, datetime | None]]]) -> bool:
    """Whether in every round the hosts' visits all overlapped (K at once with K >= the hosts)."""
    return all(platform_windows(w)["same_time"] for w in windows.values())
