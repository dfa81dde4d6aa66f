"""Merge per-node SQLite shards into one store, idempotently.

For farms whose nodes cannot reach a database, each task writes its own SQLite file. Collect
copies every campaign of the fleet (with its host and measurements) into the target store. A
campaign is known by a key made of its shard-independent identity (study, start time, labels,
host fingerprint), kept in the copy's labels as ``collected``: collecting twice adds nothing,
and a campaign that was still running at the first collect is replaced by its finished state.
The files a campaign recorded (artifacts: perf.data, reports) travel with it.

A failover shard (store/failover.py: the task lost the store mid-campaign) continues campaigns of
one store under their ids there: its runs and the files it recorded after the loss are appended
to them, leaving out any the store has already (the write whose commit went unanswered), and the
campaign takes the shard's end state.
Once all of it is in, the shard is renamed NAME.db.merged, so the next collect skips it.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perflab.errors import PerflabError
from perflab.store import dumps, envelope, open_store
from perflab.store.failover import CONTINUES_LABEL, FAILOVER_LABEL

_BATCH = 5000  # measurements per insert: one executemany, bounded memory


@dataclass
class CollectResult:
    shards: int = 0
    copied: int = 0  # campaigns new in the target
    updated: int = 0  # campaigns whose newer state replaced an older copy
    unchanged: int = 0
    measurements: int = 0
    skipped: list[str] | None = None  # shards that could not be read, with why
    merged: list[str] | None = None  # failover shards all in, renamed *.db.merged


def _key(campaign, fingerprint: str | None) -> str:
    ident = {"study": campaign.study, "started": campaign.started.isoformat(),
             "labels": {k: v for k, v in campaign.labels.items() if k != "collected"},
             "host": fingerprint, "config": campaign.config}
    return hashlib.sha256(dumps(ident).encode()).hexdigest()[:32]


def collect(name: str, shard_dir: Path, target, required: bool = True) -> CollectResult:
    """Copy the fleet ``name``'s campaigns from every *.db under shard_dir into ``target``.

    ``required``: a missing or empty directory is an error (else nothing to do).
    """
    paths = sorted(shard_dir.glob("*.db")) if shard_dir.is_dir() else []
    if required and not shard_dir.is_dir():
        raise PerflabError(f"no shard directory {shard_dir}; give the directory the tasks wrote to (--from)")
    if required and not paths:
        raise PerflabError(f"no *.db shards in {shard_dir}; did the fleet's tasks run with --shards there?")
    res = CollectResult(skipped=[], merged=[])
    assert res.skipped is not None and res.merged is not None  # made as lists just above
    existing = {c.labels.get("collected"): c for c in target.campaigns() if c.labels.get("collected")}
    for path in paths:
        if target.path and Path(target.path).resolve() == path.resolve():
            continue
        try:
            shard = open_store(str(path))
        except PerflabError as exc:
            res.skipped.append(f"{path.name}: {exc}")
            continue
        res.shards += 1
        with shard:
            camps = [c for c in shard.campaigns() if c.labels.get("fleet") == name]
            failover = any(c.labels.get(FAILOVER_LABEL) for c in camps)
            foreign = [why for c in camps if c.labels.get(CONTINUES_LABEL) and (why := _not_here(target, c))]
            if foreign:  # it belongs to another store: nothing of it here, kept for that one
                res.skipped.append(f"{path.name}: {foreign[0]}")
                continue
            for camp in camps:
                host = shard.host(camp.host_id) if camp.host_id else None
                if camp.labels.get(CONTINUES_LABEL):
                    added, changed = _continue(shard, target, camp, host)
                    res.updated += changed
                    res.unchanged += not changed
                    res.measurements += added
                    continue
                key = _key(camp, host["fingerprint"] if host else None)
                old = existing.get(key)
                if old is not None and old.status == camp.status and old.n_measurements == camp.n_measurements:
                    res.unchanged += 1
                    continue
                new_id = _copy(shard, target, camp, host, key, replace=old.id if old else None)
                existing[key] = target.campaign(new_id)
                res.updated += old is not None
                res.copied += old is None
                res.measurements += camp.n_measurements
        if failover:
            # All of it is in the store it continues: renamed, so no later collect reads it again.
            for suffix in ("", "-wal", "-shm"):
                part = path.with_name(path.name + suffix)
                if part.exists():
                    part.rename(path.with_name(path.name + ".merged" + suffix))
            res.merged.append(path.name)
    return res


def _keys(rows) -> set[tuple]:
    """What tells two stored runs apart (store.measurements._committed looks up the same)."""
    return {(r.label, r.params, int(r.rep), int(r.wall_ns), int(r.start_ns)) for r in rows}


def _not_here(target, camp) -> str | None:
    """Why the target does not hold the campaign a failover shard's ``camp`` continues, or None."""
    try:
        old = target.campaign(camp.id)
    except PerflabError:
        old = None
    same = ("fleet", "fleet_slot", "slurm_job_id")
    if old is not None and old.study == camp.study and all(old.labels.get(k) == camp.labels.get(k) for k in same):
        return None
    return (f"campaign {camp.id} continues a {camp.study} campaign of slot {camp.labels.get('fleet_slot')} "
            f"in {camp.labels.get(FAILOVER_LABEL)}, which {target.display} does not hold; give --db the "
            "store the task wrote to")


def _continue(shard, target, camp, host) -> tuple[int, bool]:
    """Append a failover shard's runs of campaign ``camp.id`` to the target's campaign of that id,
    and give it the shard's end state, in one transaction: (runs added, whether anything changed)."""
    import sqlalchemy as sa

    old = target.campaign(camp.id)
    host_id = old.host_id if old.host_id is not None or host is None else target.add_host(
        host["metadata"], host["topology"])
    t, m = target.t, shard.t["measurements"]
    cols = (m.c.label, m.c.params, m.c.rep, m.c.wall_ns, m.c.start_ns)
    rows = shard.engine.connect()
    try:
        with target.engine.begin() as conn:
            tm = t["measurements"]
            have = _keys(conn.execute(sa.select(*(tm.c[c.name] for c in cols)).where(tm.c.campaign_id == old.id)))
            new = []
            for row in rows.execute(sa.select(m).where(m.c.campaign_id == camp.id).order_by(m.c.id)):
                if next(iter(_keys([row]))) not in have:
                    new.append({**{k: v for k, v in row._mapping.items() if k != "id"}, "campaign_id": old.id})
            for i in range(0, len(new), _BATCH):
                conn.execute(tm.insert(), new[i:i + _BATCH])
            files = _artifacts(conn, shard, target, camp.id, old.id)
            changed = bool(new) or files > 0 or \
                (old.status, old.summary, old.host_id) != (camp.status, camp.summary, host_id)
            if changed:
                c = t["campaigns"]
                conn.execute(c.update().where(c.c.id == old.id).values(
                    status=camp.status, summary=_stored(camp), finished=camp.finished, host_id=host_id))
    except sa.exc.SQLAlchemyError as exc:
        raise _failed("merge", camp, target, exc) from None
    finally:
        rows.close()
    return len(new), changed


def _stored(camp) -> dict | None:
    """A campaign's summary as the target stores it: in its envelope, as Store.finish_campaign writes it."""
    return None if camp.summary is None else envelope.wrap(camp.study, camp.summary)


def _artifacts(conn, shard, target, src_id: int, dst_id: int) -> int:
    """Copy the files a shard's campaign recorded (perf.data, reports) that the target's campaign
    lacks, within the caller's transaction; a file is known by its kind, path and hash."""
    import sqlalchemy as sa

    a, ta = shard.t["artifacts"], target.t["artifacts"]
    have = {(r.kind, r.path, r.sha256) for r in conn.execute(
        sa.select(ta.c.kind, ta.c.path, ta.c.sha256).where(ta.c.campaign_id == dst_id))}
    with shard.engine.connect() as rows:
        new = [{**{k: v for k, v in r._mapping.items() if k != "id"}, "campaign_id": dst_id}
               for r in rows.execute(sa.select(a).where(a.c.campaign_id == src_id).order_by(a.c.id))
               if (r.kind, r.path, r.sha256) not in have]
    if new:
        conn.execute(ta.insert(), new)
    return len(new)


def _failed(verb: str, camp: Any, target: Any, exc: Exception) -> PerflabError:
    """One line for a merge or copy the target refused (its transaction rolled back)."""
    why = " ".join(str(getattr(exc, "orig", exc)).split())[:200]
    return PerflabError(f"cannot {verb} campaign {camp.id} into {target.display}: {why}; nothing of it "
                        "was kept, rerun collect")


def _copy(shard, target, camp, host, key: str, replace: int | None) -> int:
    """One campaign, its host and its measurements, in one transaction of the target."""
    import sqlalchemy as sa

    t = target.t
    host_id = target.add_host(host["metadata"], host["topology"]) if host else None
    rows = shard.engine.connect()
    try:
        with target.engine.begin() as conn:
            if replace is not None:
                conn.execute(t["measurements"].delete().where(t["measurements"].c.campaign_id == replace))
                conn.execute(t["artifacts"].delete().where(t["artifacts"].c.campaign_id == replace))
                conn.execute(t["campaigns"].delete().where(t["campaigns"].c.id == replace))
            res = conn.execute(t["campaigns"].insert().values(
                study=camp.study, name=camp.name, status=camp.status, config=camp.config,
                summary=_stored(camp), host_id=host_id, parent_id=None, started=camp.started,
                finished=camp.finished, labels={**camp.labels, "collected": key},
            ))
            cid = int(res.inserted_primary_key[0])
            m = shard.t["measurements"]
            query = sa.select(m).where(m.c.campaign_id == camp.id).order_by(m.c.id)
            batch = []
            for row in rows.execute(query):
                values = {k: v for k, v in row._mapping.items() if k != "id"}
                values["campaign_id"] = cid
                batch.append(values)
                if len(batch) >= _BATCH:
                    conn.execute(t["measurements"].insert(), batch)
                    batch = []
            if batch:
                conn.execute(t["measurements"].insert(), batch)
            _artifacts(conn, shard, target, camp.id, cid)
    except sa.exc.SQLAlchemyError as exc:
        raise _failed("copy", camp, target, exc) from None
    finally:
        rows.close()
    return cid
