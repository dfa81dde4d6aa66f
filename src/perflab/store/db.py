"""The results store: SQLite by default, PostgreSQL by URL, through SQLAlchemy 2 Core.

Every write is its own transaction, committed before the call returns, so a crash or Ctrl-C
loses at most the run in flight (hyperfine exports after every benchmark for the same reason).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from perflab.errors import PerflabError
from perflab.platform.machine import campaign_labels
from perflab.store import envelope, tx
from perflab.store.baselines import BaselineMethods
from perflab.store.campaigns import CampaignMethods
from perflab.store.failover import FailoverStore
from perflab.store.measurements import MeasurementMethods
from perflab.store.monitor import MonitorMethods
from perflab.store.rows import Artifact, Campaign
from perflab.store.summaries import SummaryMethods
from perflab.store.schema import MIGRATIONS, SCHEMA_VERSION, current_tables, version_table
from perflab.store.url import _one_line, _resolve_url, _sa
from perflab.store.values import STATUSES, _jsonable, _now, _utc, dumps, host_identity

NAME_MAX = 200  # campaigns.name is VARCHAR(200) (schema v1): longer is refused before the insert


def open_store(url_or_path: str | None = None) -> "Store":
    """Open (creating and migrating as needed) the results store at a path or URL.

    None means $PERFLAB_DB or ./perflab.db (SQLite). A ``postgresql://`` URL uses psycopg 3.
    """
    sa = _sa()
    url, display, sqlite_path = _resolve_url(url_or_path)
    kwargs: dict[str, Any] = {"json_serializer": dumps, "future": True}
    if url.startswith("sqlite"):
        # A long busy timeout: several perflab processes may share one file.
        kwargs["connect_args"] = {"timeout": 30}
    else:
        kwargs["connect_args"] = {"connect_timeout": 5}
        kwargs["pool_pre_ping"] = True
    engine = sa.create_engine(url, **kwargs)
    if url.startswith("sqlite"):
        @sa.event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            # The busy timeout first: switching a fresh file to WAL then waits for another
            # process opening it at the same moment instead of failing.
            cur.execute("PRAGMA busy_timeout=30000")
            # WAL: readers (perflab report) never block the writer; FULL sync: a committed
            # measurement survives a power cut, not just a crash.
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=FULL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()
            # We issue BEGIN ourselves (below), not the sqlite3 module, which begins late.
            dbapi_conn.isolation_level = None

        @sa.event.listens_for(engine, "begin")
        def _begin(conn: Any) -> None:
            # A write takes the lock up front (BEGIN IMMEDIATE): its reads and writes see one
            # state, so two processes recording the same host cannot both decide to insert it,
            # and the busy timeout applies instead of an immediate "database is locked".
            write = conn.get_execution_options().get("perflab_write")
            conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except sa.exc.SQLAlchemyError as exc:
        engine.dispose()
        hint = "check the URL or start the server" if sqlite_path is None else "check the path and its permissions"
        raise PerflabError(f"cannot open results store {display}: {_one_line(exc)}; {hint}") from None
    store = Store(engine, display, sqlite_path)
    store._migrate()
    shard = os.environ.get("PERFLAB_FAILOVER_SHARD", "").strip()
    if shard and sqlite_path is None and url.startswith("postgresql"):
        # A fleet task: what the server cannot take after its retries goes to this SQLite file.
        return FailoverStore(store, shard)  # type: ignore[return-value]  # FailoverStore forwards every Store method
    return store


class Store(CampaignMethods, MeasurementMethods, BaselineMethods, SummaryMethods, MonitorMethods):
    """Campaigns, measurements, hosts and artifacts; every method commits before returning."""

    def __init__(self, engine: Any, display: str, sqlite_path: str | None = None) -> None:
        self._sa = _sa()
        self.engine = engine
        self.display = display
        self.path = sqlite_path
        self.t = current_tables(self._sa)

    def __repr__(self) -> str:
        return f"Store({self.display})"

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- schema -----------------------------------------------------------------------------

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    def schema_version(self) -> int:
        sa = self._sa
        with self.engine.connect() as conn:
            if not sa.inspect(conn).has_table("schema_version"):
                return 0
            v = conn.execute(sa.select(sa.func.max(version_table(sa).c.version))).scalar()
            return int(v or 0)

    def _migrate(self, upto: int = SCHEMA_VERSION) -> None:
        """Apply the missing numbered migrations, each in its own transaction."""
        sa = self._sa
        from perflab import __version__

        vt = version_table(sa)
        try:
            with self.engine.execution_options(perflab_write=True).begin() as conn:
                if self.dialect == "postgresql":
                    # Two perflab processes opening a fresh database must not both migrate it.
                    conn.execute(sa.text("SELECT pg_advisory_xact_lock(742114)"))
                vt.create(conn, checkfirst=True)
                have = int(conn.execute(sa.select(sa.func.max(vt.c.version))).scalar() or 0)
                if have > SCHEMA_VERSION:
                    raise PerflabError(
                        f"results store {self.display} has schema version {have}, newer than this "
                        f"perflab knows ({SCHEMA_VERSION}); upgrade perflab (a newer checkout: git pull, make setup) "
                        "or use another --db"
                    )
                for n in range(have + 1, upto + 1):
                    MIGRATIONS[n](conn, sa)
                    conn.execute(vt.insert().values(version=n, applied=_now(), perflab_version=__version__))
                    if self.dialect == "sqlite":
                        conn.exec_driver_sql(f"PRAGMA user_version = {n}")
        except PerflabError:
            raise
        except self._sa.exc.SQLAlchemyError as exc:
            raise PerflabError(
                f"cannot upgrade results store {self.display} to schema version {upto}: "
                f"{_one_line(exc)}; back up the file and report a bug"
            ) from None

    def _write(self) -> Any:
        """A transaction that turns a lost server into a one-line PerflabError."""
        return tx.Tx(self)

    # -- hosts ------------------------------------------------------------------------------

    def add_host(self, metadata: dict, topology: dict | None = None) -> int:
        """Record a machine (idempotent: the same machine gets the same id); return its id."""
        sa = self._sa
        hosts = self.t["hosts"]
        metadata, topology, hostname, fingerprint = host_identity(metadata, topology)
        for attempt in range(2):
            try:
                with self._write() as conn:
                    row = conn.execute(sa.select(hosts.c.id).where(hosts.c.fingerprint == fingerprint)).first()
                    if row is not None:
                        # Keep the latest look (load, steal) while the identity stays the same.
                        conn.execute(hosts.update().where(hosts.c.id == row.id).values(metadata=metadata))
                        return int(row.id)
                    res = conn.execute(hosts.insert().values(
                        hostname=hostname, fingerprint=fingerprint, metadata=metadata, topology=topology,
                        created=_now(),
                    ))
                    return int(res.inserted_primary_key[0])
            except sa.exc.IntegrityError:
                # Another process (a fleet's node sharing this store) recorded the same machine
                # between our look and our insert: the second look finds its row.
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def host(self, host_id: int) -> dict:
        sa = self._sa
        hosts = self.t["hosts"]
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(hosts).where(hosts.c.id == host_id)).first()
        if row is None:
            raise PerflabError(f"no host {host_id} in {self.display}")
        return {"id": row.id, "hostname": row.hostname, "fingerprint": row.fingerprint,
                "metadata": row.metadata or {}, "topology": row.topology, "created": _utc(row.created)}

    # -- campaigns --------------------------------------------------------------------------

    def start_campaign(
        self, study: str, config: dict, host_id: int | None = None, parent_id: int | None = None,
        name: str = "", labels: dict | None = None,
    ) -> int:
        """Open a campaign with status 'running'; return its id.

        The batch labels of the environment (fleet name and slot, Slurm ids, host label) are
        merged under ``labels``, so that every study run by a fleet task is found by its fleet
        without each study passing them.
        """
        if len(name or "") > NAME_MAX:
            # The column is VARCHAR(200): PostgreSQL would refuse the insert with a DataError.
            raise PerflabError(f"the name {name[:40]!r}... has {len(name)} characters: give one of at "
                               f"most {NAME_MAX}")
        labels = {**campaign_labels(), **(labels or {})}
        with self._write() as conn:
            res = conn.execute(self.t["campaigns"].insert().values(
                study=study, name=name or "", status="running", config=_jsonable(config or {}),
                summary=None, host_id=host_id, parent_id=parent_id, started=_now(),
                labels=_jsonable(labels) if labels else None,
            ))
            return int(res.inserted_primary_key[0])

    def set_campaign_host(self, campaign_id: int, host_id: int) -> None:
        """Point a campaign at its host (a capture that finished while the study ran)."""
        c = self.t["campaigns"]
        tx.write(self, lambda conn: conn.execute(c.update().where(c.c.id == campaign_id).values(host_id=host_id)))

    def finish_campaign(self, campaign_id: int, status: str = "done", summary: dict | None = None) -> None:
        """Close a campaign: status done, interrupted or failed, and the study's summary."""
        if status not in STATUSES:
            raise ValueError(f"campaign status must be one of {STATUSES}, not {status!r}")
        c = self.t["campaigns"]
        if summary is not None:
            with self.engine.connect() as conn:
                study = conn.execute(self._sa.select(c.c.study).where(c.c.id == int(campaign_id))).scalar()
            summary = envelope.wrap(study, summary) if study is not None else summary
        values = dict(status=status, summary=_jsonable(summary) if summary is not None else None,
                      finished=None if status == "running" else _now())
        # An update is idempotent: retried as it is.
        rowcount = tx.write(self, lambda conn: conn.execute(
            c.update().where(c.c.id == campaign_id).values(**values)).rowcount)
        if rowcount == 0:
            raise PerflabError(f"no campaign {campaign_id} in {self.display}")
        if status == "done":
            try:
                self.summarise_runs([campaign_id], self.headline_quantity(campaign_id))
            except (PerflabError, self._sa.exc.SQLAlchemyError):
                # The campaign is closed and its runs kept; a report computes a missing summary.
                pass

    def resume_campaign(self, campaign_id: int, owner: dict | None = None) -> Campaign:
        """Mark an interrupted/failed campaign running again, held by ``owner`` where given
        (platform/owner.py); done_keys() says what to skip."""
        c = self.t["campaigns"]
        camp = self.campaign(campaign_id)
        labels = {**(camp.labels or {}), "owner": owner} if owner else camp.labels
        with self._write() as conn:
            conn.execute(c.update().where(c.c.id == campaign_id).values(
                status="running", finished=None, labels=_jsonable(labels) if labels else None))
        return camp

    def _campaign_query(self, counted: bool = True, config: bool = True) -> Any:
        sa = self._sa
        c, m = self.t["campaigns"], self.t["measurements"]
        if not config:
            cols = [col if col.name != "config" else sa.null().label("config") for col in c.columns]
            return sa.select(*cols, sa.null().label("n_measurements"))
        if not counted:
            return sa.select(c, sa.null().label("n_measurements"))
        n = (sa.select(sa.func.count(m.c.id)).where(m.c.campaign_id == c.c.id)
             .correlate(c).scalar_subquery().label("n_measurements"))
        return sa.select(c, n)

    @staticmethod
    def _campaign(row: Any) -> Campaign:
        return Campaign(
            id=row.id, study=row.study, name=row.name or "", status=row.status,
            config=row.config or {}, summary=envelope.unwrap(row.summary), host_id=row.host_id,
            parent_id=row.parent_id, started=_utc(row.started),  # type: ignore[arg-type]  # NOT NULL in the schema
            finished=_utc(row.finished),
            n_measurements=None if row.n_measurements is None else int(row.n_measurements),
            labels=row.labels or {},
        )

    def campaign(self, campaign_id: int) -> Campaign:
        c = self.t["campaigns"]
        with self.engine.connect() as conn:
            row = conn.execute(self._campaign_query().where(c.c.id == int(campaign_id))).first()
        if row is None:
            raise PerflabError(
                f"no campaign {campaign_id} in results store {self.display}; list them with 'perflab results'"
            )
        return self._campaign(row)

    def campaigns(self, study: str | None = None, parent_id: int | None = None,
                  last: int | None = None, status: str | None = None, lean: bool = False) -> list[Campaign]:
        """Campaigns, oldest first; filtered by study, parent campaign and/or status; only the
        newest ``last`` of them where given (a listing need not read thousands). ``lean`` leaves
        n_measurements None and config empty: counting is a pass over every run of the campaigns
        (100,000 campaigns of a fleet: 100 million rows), and a config one more JSON to decode."""
        c = self.t["campaigns"]
        q = self._campaign_query(counted=not lean, config=not lean)
        if study is not None:
            q = q.where(c.c.study == study)
        if parent_id is not None:
            q = q.where(c.c.parent_id == parent_id)
        if status is not None:
            q = q.where(c.c.status == status)
        with self.engine.connect() as conn:
            if last:
                return [self._campaign(r) for r in conn.execute(q.order_by(c.c.id.desc()).limit(last))][::-1]
            return [self._campaign(r) for r in conn.execute(q.order_by(c.c.id))]

    def count_campaigns(self, study: str | None = None) -> int:
        sa, c = self._sa, self.t["campaigns"]
        q = sa.select(sa.func.count(c.c.id))
        if study is not None:
            q = q.where(c.c.study == study)
        with self.engine.connect() as conn:
            return int(conn.execute(q).scalar() or 0)

    def latest_campaign(self, study: str, status: str | None = "done") -> Campaign | None:
        found = self.campaigns(study=study, status=status, last=1)
        return found[-1] if found else None

    # -- measurements -----------------------------------------------------------------------

    # -- artifacts --------------------------------------------------------------------------

    def add_artifact(self, campaign_id: int, kind: str, path: str, meta: dict | None = None) -> int:
        """Record a produced file by absolute path, with its sha256 and size when it is a file."""
        p = Path(path).absolute()
        sha, size = None, None
        if p.is_file():
            h = hashlib.sha256()
            with open(p, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            sha, size = h.hexdigest(), p.stat().st_size
        with self._write() as conn:
            res = conn.execute(self.t["artifacts"].insert().values(
                campaign_id=campaign_id, kind=kind, path=str(p), sha256=sha, size=size,
                meta=_jsonable(meta or {}), created=_now(),
            ))
            return int(res.inserted_primary_key[0])

    def artifacts(self, campaign_id: int) -> list[Artifact]:
        sa = self._sa
        a = self.t["artifacts"]
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(a).where(a.c.campaign_id == campaign_id).order_by(a.c.id)).all()
        return [Artifact(id=r.id, campaign_id=r.campaign_id, kind=r.kind, path=r.path, sha256=r.sha256,
                         size=r.size, meta=r.meta or {}, created=_utc(r.created)) for r in rows]
