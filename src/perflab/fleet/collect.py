"""Merge per-node SQLite shards into one store, idempotently.

For farms whose nodes cannot reach a database, each task writes its own SQLite file. Collect
copies every campaign of the fleet (with its host and measurements) into the target store. A
campaign is known by a key made of its shard-independent identity (study, start time, labels,
host fingerprint), kept in the copy's labels as ``collected``: collecting twice adds nothing,
and a campaign that was still running at the first collect is replaced by its finished state.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from perflab.errors import PerflabError
from perflab.store import dumps, open_store

_BATCH = 5000  # measurements per insert: one executemany, bounded memory


@dataclass
class CollectResult:
    shards: int = 0
    copied: int = 0  # campaigns new in the target
    updated: int = 0  # campaigns whose newer state replaced an older copy
    unchanged: int = 0
    measurements: int = 0
    skipped: list[str] | None = None  # shards that could not be read, with why


def _key(campaign, fingerprint: str | None) -> str:
    ident = {"study": campaign.study, "started": campaign.started.isoformat(),
             "labels": {k: v for k, v in campaign.labels.items() if k != "collected"},
             "host": fingerprint, "config": campaign.config}
    return hashlib.sha256(dumps(ident).encode()).hexdigest()[:32]


def collect(name: str, shard_dir: Path, target) -> CollectResult:
    """Copy the fleet ``name``'s campaigns from every *.db under shard_dir into ``target``."""
    if not shard_dir.is_dir():
        raise PerflabError(f"no shard directory {shard_dir}; give the directory the tasks wrote to (--from)")
    paths = sorted(shard_dir.glob("*.db"))
    if not paths:
        raise PerflabError(f"no *.db shards in {shard_dir}; did the fleet's tasks run with --shards there?")
    res = CollectResult(skipped=[])
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
            for camp in shard.campaigns():
                if camp.labels.get("fleet") != name:
                    continue
                host = shard.host(camp.host_id) if camp.host_id else None
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
    return res


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
                conn.execute(t["campaigns"].delete().where(t["campaigns"].c.id == replace))
            res = conn.execute(t["campaigns"].insert().values(
                study=camp.study, name=camp.name, status=camp.status, config=camp.config,
                summary=camp.summary, host_id=host_id, parent_id=None, started=camp.started,
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
    except sa.exc.SQLAlchemyError as exc:
        raise PerflabError(f"cannot copy campaign {camp.id} into {target.display}: "
                           f"{' '.join(str(getattr(exc, 'orig', exc)).split())[:200]}; nothing of it "
                           "was kept, rerun collect") from None
    finally:
        rows.close()
    return cid
