"""A fleet's record in the store and where each of its slots stands.

The fleet itself is one campaign of study ``fleet`` named after it: its config holds what was
submitted (study and arguments, store URL without password, placement, script and log paths),
its summary the slot -> job map of the latest submission and the history of submissions. The
studies the tasks run are ordinary campaigns whose labels carry the fleet name and slot (the
store adds them from PERFLAB_FLEET / PERFLAB_FLEET_SLOT), so no table of its own is needed.
"""

from __future__ import annotations

import glob
import json
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from perflab.errors import PerflabError
from perflab.fleet.submitter import SlotState, Submitter

STUDY = "fleet"


@dataclass(frozen=True)
class Fleet:
    """The fleet record: what was submitted and the latest job of every slot."""

    campaign_id: int
    name: str
    config: dict
    jobs: dict[str, str]  # slot -> job id of its latest submission
    history: list = field(default_factory=list)
    nodes: dict[str, str] = field(default_factory=dict)  # slot -> the node it is pinned to, if any

    @property
    def study(self) -> str:
        return self.config["study"]

    @property
    def slots(self) -> list[str]:
        return list(self.config["slots"])

    @property
    def log_dir(self) -> Path:
        return Path(self.config["log_dir"])


def find(store, name: str) -> Fleet | None:
    for c in store.campaigns(study=STUDY):
        if c.name == name:
            summary = c.summary or {}
            return Fleet(c.id, name, c.config, dict(summary.get("jobs") or {}), list(summary.get("history") or []),
                         dict(summary.get("nodes") or c.config.get("nodes") or {}))
    return None


def load(store, name: str) -> Fleet:
    fleet = find(store, name)
    if fleet is None:
        known = sorted(c.name for c in store.campaigns(study=STUDY))
        raise PerflabError(f"no fleet {name!r} in {store.display}; fleets there: "
                           f"{', '.join(known) or 'none'} (check the name and --db)")
    return fleet


def create(store, name: str, config: dict) -> Fleet:
    """Record a new fleet before anything is submitted (its name must be new in this store)."""
    if find(store, name) is not None:
        raise PerflabError(f"a fleet named {name!r} exists already in {store.display}; choose another "
                           f"name, or use 'perflab fleet resubmit {name}'")
    cid = store.start_campaign(STUDY, config, name=name, labels={"fleet": name})
    return Fleet(cid, name, config, {}, [])


def record_jobs(store, fleet: Fleet, jobs: dict[str, str], nodes: dict[str, str] | None = None) -> Fleet:
    """Remember a submission: its slots now point at the new jobs (and nodes, where pinned)."""
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    merged = {**fleet.jobs, **jobs}
    pinned = {**fleet.nodes, **(nodes or {})}
    history = fleet.history + [{"submitted": now, "jobs": jobs, **({"nodes": nodes} if nodes else {})}]
    # 'done' means submitted; where the slots stand is fleet status's business.
    summary = {"jobs": merged, "history": history, **({"nodes": pinned} if pinned else {})}
    store.finish_campaign(fleet.campaign_id, "done", summary=summary)
    return Fleet(fleet.campaign_id, fleet.name, fleet.config, merged, history, pinned)


@dataclass
class SlotStatus:
    """One slot of a fleet: its state, the job and campaign behind it, and why if it failed."""

    slot: str
    state: str  # pending, running, done, failed
    job: str | None
    campaign_id: int | None = None
    host: str | None = None
    reason: str = ""
    log: str | None = None


def task_campaigns(store, fleet: Fleet) -> dict[str, list]:
    """slot -> the study campaigns its tasks recorded, oldest first (without their config and
    run counts, which no fleet view needs)."""
    out: dict[str, list] = {}
    for c in store.campaigns(study=fleet.study, lean=True):
        if c.labels.get("fleet") == fleet.name:
            out.setdefault(str(c.labels.get("fleet_slot", "?")), []).append(c)
    return out


def failover_dir(log_dir: Path) -> Path:
    """Where a fleet's tasks keep what a lost store did not take: one SQLite shard per task."""
    return Path(log_dir) / "shards"


def failover_shards(fleet: Fleet, slot: str, job: str) -> list[Path]:
    """The shards the task of ``job`` in ``slot`` wrote (NAME.SLOT.jobJOB[.N].db)."""
    d, base = failover_dir(fleet.log_dir), glob.escape(f"{fleet.name}.{slot}.job{job}")
    return sorted([*d.glob(f"{base}.db"), *d.glob(f"{base}.*.db")])


def shard_campaign(path: Path, study: str) -> tuple[int, str, dict] | None:
    """(id, status, labels) of the last ``study`` campaign in a shard, read-only; None if none."""
    try:
        conn = sqlite3.connect(path.absolute().as_uri() + "?mode=ro", uri=True)
        try:
            row = conn.execute("SELECT id, status, labels FROM campaigns WHERE study = ? ORDER BY id DESC "
                               "LIMIT 1", (study,)).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    return None if row is None else (int(row[0]), str(row[1]), json.loads(row[2] or "{}"))


def host_name(campaign, store_hosts: dict[int, dict]) -> str:
    """A task's host: its stand-in label, else the Slurm node, else the recorded hostname."""
    labels = campaign.labels
    if labels.get("host_label"):
        return labels["host_label"]
    if labels.get("slurm_node"):
        return labels["slurm_node"]
    host = store_hosts.get(campaign.host_id) if campaign.host_id else None
    return (host or {}).get("hostname") or f"slot {labels.get('fleet_slot', '?')}"


def log_line(path: Path) -> str:
    """The line of a task's log that says why it failed: perflab's error, else the last line."""
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    for ln in reversed(lines):
        if ln.startswith("perflab: error:") or "error:" in ln.lower():
            return ln[:300]
    return lines[-1][:300] if lines else ""


def slot_states(store, fleet: Fleet, submitter: Submitter | None, hosts: dict[int, dict] | None = None,
                camps: dict[str, list] | None = None) -> list[SlotStatus]:
    """Every slot's state from the store (a done campaign is done) and the batch system.

    Without a submitter (perflab cost reading a fleet's figures) only the store is asked.
    """
    hosts = hosts if hosts is not None else {}
    camps = camps if camps is not None else task_campaigns(store, fleet)
    batch: dict[str, SlotState] = submitter.status(fleet.jobs) if submitter and fleet.jobs else {}
    out = []
    for slot in fleet.slots:
        job = fleet.jobs.get(slot)
        mine = camps.get(slot, [])
        done = [c for c in mine if c.status == "done"]
        log = submitter.log_path(fleet.log_dir, fleet.config["job_name"], job) if job and submitter else None
        st = SlotStatus(slot, "failed", job, log=str(log) if log else None)
        b = batch.get(slot)
        if done:
            c = done[-1]
            st.state, st.campaign_id, st.host = "done", c.id, host_name(c, hosts)
        elif job is None:
            st.state, st.reason = "pending", "not submitted"
        elif b is not None and b.state in ("pending", "running"):
            st.state, st.reason = b.state, b.reason
        elif b is not None and b.state == "done" and fleet.config.get("shards"):
            st.state, st.reason = "done", "in its shard; run perflab fleet collect to merge it"
        else:
            # The store went away for good mid-task: the task kept the rest in its own shard.
            kept = [(p, c) for p in failover_shards(fleet, slot, job) if (c := shard_campaign(p, fleet.study))]
            finished = [(p, c[2]) for p, c in kept if c[1] == "done"]
            if finished:
                path, labels = finished[-1]
                st.state, st.host = "done", labels.get("host_label") or labels.get("slurm_node")
                st.reason = f"stored in shard {path}; merge it with perflab fleet collect {fleet.name}"
            else:
                st.reason = _why_failed(st, b, mine, hosts, log, kept)
        out.append(st)
    return out


def _why_failed(st: SlotStatus, b: SlotState | None, mine: list, hosts: dict[int, dict], log: Path | None,
                kept: list) -> str:
    """Slurm's state, the campaign's, and the line of the task's log that says why."""
    reasons = []
    if b is not None and b.raw:
        reasons.append(f"Slurm: {b.raw} ({b.reason})" if b.reason else f"Slurm: {b.raw}")
    if mine:
        c = mine[-1]
        st.campaign_id, st.host = c.id, host_name(c, hosts)
        reasons.append(f"campaign {c.id} {c.status}")
    else:
        reasons.append("no campaign recorded")
    reasons += [f"campaign {c[0]} {c[1]} in shard {p}" for p, c in kept]
    line = log_line(log) if log else ""
    if line:
        reasons.append(line)
    return "; ".join(reasons)
