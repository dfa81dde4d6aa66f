"""The runs of a fleet's hosts on one time axis, and what the time-blocked judgement says of them.

Each run records its start and end on its node's monotonic clock (measure/real.py), which means
nothing on another node. A fleet task records its node's wall clock minus that monotonic clock
as the campaign label ``clock_offset_ns`` (fleet/script.py); a run's wall time is its start plus
that offset. A campaign without the label (an older store, a study run outside a fleet) is
placed by its first run starting when the campaign started: an estimate, early by however long
the study took to reach its first run.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any

from perflab.fleet.headline import _fetch_raw
from perflab.stats.time_blocks import GroupTime, TimedRuns


def _epoch(t: datetime) -> float:
    # SQLite hands back naive datetimes; the store writes UTC.
    return (t if t.tzinfo else t.replace(tzinfo=timezone.utc)).timestamp()


def timed_runs(store, campaigns: list, metric: str | None, labels: dict[int, str] | None) -> dict[int, TimedRuns]:
    """campaign id -> its compared runs (the values host_data reads) with wall-clock start and end
    in seconds; a campaign whose runs carry no start time is left out."""
    import numpy as np
    import sqlalchemy as sa

    if not campaigns:
        return {}
    m = store.t["measurements"]
    value = m.c.metrics[metric].as_float() if metric else m.c.wall_ns
    ok = sa.and_(m.c.exit_code == 0, m.c.signal.is_(None), m.c.timed_out.is_(False), m.c.failure.is_(None),
                 value.is_not(None))
    query = (sa.select(m.c.campaign_id, m.c.start_ns, m.c.end_ns, value, m.c.label)
             .where(m.c.campaign_id.in_([c.id for c in campaigns])).where(ok))
    if labels:
        query = query.where(m.c.label.in_(sorted(set(labels.values()))))
    if store.dialect == "postgresql":
        rows = _fetch_raw(store, query)
    else:
        with store.engine.connect() as conn:
            rows = conn.execute(query).all()
    by: dict[int, list] = {}
    for cid, s, e, v, label in rows:
        if labels and labels.get(cid) != label:
            continue
        by.setdefault(cid, []).append((s, e, v))
    del rows  # a million rows of Python objects: gone before the arrays are made
    out = {}
    for c in campaigns:
        runs = by.get(c.id)
        if not runs:
            continue
        arr = np.array(runs, dtype=float)
        if not (arr[:, 0] > 0).all():
            continue
        vals = arr[:, 2] if metric else 1e9 / arr[:, 2]
        keep = np.isfinite(vals)
        offset = (c.labels or {}).get("clock_offset_ns")
        try:
            base = float(offset) / 1e9  # type: ignore[arg-type]  # None raises TypeError, caught
        except (TypeError, ValueError):
            base = _epoch(c.started) - float(arr[:, 0].min()) / 1e9
        out[c.id] = TimedRuns(arr[keep, 0] / 1e9 + base, arr[keep, 1] / 1e9 + base, vals[keep])  # type: ignore[arg-type]  # arrays
    return out


def _hms(t: float) -> str:
    return datetime.fromtimestamp(t, timezone.utc).strftime("%H:%M:%S")


def time_summary(gt: GroupTime) -> dict[str, Any]:
    """A platform's time judgement for the JSON: how its hosts were compared, and on what."""
    out: dict[str, Any] = {"mode": gt.mode, "why": gt.why or None}
    if gt.window:
        out["window"] = {"start": _hms(gt.window[0]), "end": _hms(gt.window[1]),
                         "seconds": round(gt.window[1] - gt.window[0], 1)}
        out["blocks"] = len(gt.blocks)
        out["left_out"] = list(gt.left_out)
    if gt.mode == "rounds":
        out["rounds"] = len(gt.rounds)
    if gt.df is not None:
        out["df"] = gt.df
    if gt.detectable is not None:
        out["detectable_slowdown"] = round(gt.detectable, 4)
    return out


def time_note(gt: GroupTime, outside: int, held: list[str], visits: bool = True) -> str | None:
    """One line under the platform: what the comparison kept to, or what measuring apart cost
    (``visits``: whether the fleet could have visited its nodes in rounds, i.e. one job a node)."""
    if gt.mode in ("together", "window"):
        w = gt.window
        assert w is not None  # these two modes have a window
        tail = (f"; {outside} run(s) outside it (a host still running after a peer had ended, or "
                "started before one began) not compared") if outside else ""
        alone = (f"; {', '.join(gt.left_out)} ran outside that window (before the others started or after "
                 "they ended) and is not compared" if gt.left_out else "")
        window = f"the window the hosts ran in together ({_hms(w[0])}-{_hms(w[1])}, {w[1] - w[0]:.0f} s)"
        if gt.mode == "window":
            return (f"compared on runs of the same time: {window}, each host's runs there against its peers' "
                    f"({gt.why}, so a moment of load on one node is not told from the node: more runs give "
                    f"blocks){tail}{alone}")
        states = (f"; {', '.join(held)}: its peers' levels differed for the whole window by more than the "
                  "noise of its blocks (the machine's states may last as long as the window), and that spread "
                  "set most of its standard error; a longer measurement (more runs) tells a node from such a "
                  "state" if held else "")
        return (f"compared on runs of the same time: {window} in {len(gt.blocks)} blocks, each host against "
                f"its peers' median in each block; slow only if below them in each third of it"
                f"{tail}{alone}{states}")
    if gt.mode == "rounds":
        r = len(gt.rounds)
        tail = (f"; {outside} run(s) of visits in a round some host missed not compared" if outside else "")
        every = "every round" if r <= 3 else "each third of the rounds"
        return (f"judged in {r} rounds of visits, each host against its peers' median in each round; slow only "
                f"if below them in {every} (t-test over the rounds, {gt.df:.0f} degrees of freedom){tail}. "
                "Each round's hosts ran one after another, not at once: a change of the machine between two "
                "visits of a round is part of the round-to-round noise, which widens the test; what lasted "
                "through every visit of one host and none of its peers' is not told from the host")
    if gt.mode == "apart":
        d = gt.detectable
        cost = ("unknown" if d is None or math.isnan(d) else "more than 99%" if d > 0.99 else f"about {d:.0%}")
        return (f"judged apart ({gt.why}): no run of a host has a peer's run of the same time, so each "
                "host's level is judged against how far its peers' levels differ, and those differences "
                "include whatever changed between their windows; with these hosts it takes a slowdown of "
                f"{cost} to name one. Measure the hosts at the same time (no --max-parallel) to "
                "compare them run for run" + (", or with --visits 3 (or more) to judge them in rounds of visits"
                                               if visits else ""))
    return None
