"""The results store: SQLite by default, PostgreSQL by URL, through SQLAlchemy 2 Core.

Every write is its own transaction, committed before the call returns, so a crash or Ctrl-C
loses at most the run in flight (hyperfine exports after every benchmark for the same reason).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import signal
import socket
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field, fields, is_dataclass, asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

from perflab.errors import PerflabError
from perflab.model import RunResult
from perflab.store import tx
from perflab.store.baselines import BaselineMethods
from perflab.store.schema import MIGRATIONS, SCHEMA_VERSION, current_tables, version_table

DEFAULT_PATH = "perflab.db"
STATUSES = ("running", "done", "interrupted", "failed")

# RunResult fields stored as plain columns of `measurements` (metrics/counters are JSON).
_RESULT_COLUMNS = (
    "wall_ns", "user_s", "sys_s", "maxrss_kb", "minflt", "majflt", "nvcsw", "nivcsw",
    "exit_code", "signal", "timed_out", "start_ns", "end_ns", "stdout_tail", "stderr_tail",
    "suspect",
)
# Metadata keys that change between two looks at the same machine: not part of its identity.
_VOLATILE = ("load", "steal", "uptime", "time", "date", "free", "avail", "idle")


@dataclass(frozen=True)
class Campaign:
    """One invocation of a study: its config, status, summary and timestamps."""

    id: int
    study: str
    name: str
    status: str
    config: dict
    summary: dict | None
    host_id: int | None
    parent_id: int | None
    started: datetime
    finished: datetime | None
    n_measurements: int = 0
    labels: dict = field(default_factory=dict)  # fleet name, batch job ids, host label


@dataclass(frozen=True)
class Measurement:
    """One stored run: its resume key (label, params, rep) and what it measured."""

    id: int
    campaign_id: int
    label: str
    params: dict
    rep: int
    result: RunResult
    created: datetime | None = None


@dataclass(frozen=True)
class Artifact:
    """A file a study produced (perf.data, bundle, report), by path and content hash."""

    id: int
    campaign_id: int
    kind: str
    path: str
    sha256: str | None
    size: int | None
    meta: dict = field(default_factory=dict)
    created: datetime | None = None


def _jsonable(obj: Any) -> Any:
    """Plain JSON values; NaN/inf become null because PostgreSQL's json type rejects them."""
    if obj is None or isinstance(obj, (bool, str, int)):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        items = sorted(obj, key=repr) if isinstance(obj, (set, frozenset)) else obj
        return [_jsonable(v) for v in items]
    if is_dataclass(obj) and not isinstance(obj, type):
        return _jsonable(asdict(obj))
    if isinstance(obj, (Path, datetime)):
        return str(obj)
    if hasattr(obj, "item"):  # numpy scalars
        return _jsonable(obj.item())
    if hasattr(obj, "tolist"):  # numpy arrays
        return _jsonable(obj.tolist())
    if hasattr(obj, "_asdict"):
        return _jsonable(obj._asdict())
    return str(obj)


def dumps(obj: Any) -> str:
    """JSON text of any study value (the engine's json_serializer)."""
    return json.dumps(_jsonable(obj), sort_keys=True, allow_nan=False)


def canonical_params(params: dict | None) -> str:
    """Canonical JSON of a measurement's parameters (sorted keys, no spaces): the resume key."""
    return json.dumps(_jsonable(params or {}), sort_keys=True, separators=(",", ":"), allow_nan=False)


def host_identity(metadata: dict | None, topology: dict | None) -> tuple[dict, dict | None, str, str]:
    """(metadata, topology, hostname, fingerprint) as stored: the same machine, the same print."""
    metadata = _jsonable(metadata or {})
    topology = _jsonable(topology) if topology is not None else None
    hostname = str(metadata.get("hostname") or socket.gethostname())
    stable = {k: v for k, v in metadata.items() if not any(w in k.lower() for w in _VOLATILE)}
    fingerprint = hashlib.sha256(
        dumps({"hostname": hostname, "metadata": stable, "topology": topology}).encode()).hexdigest()
    return metadata, topology, hostname, fingerprint


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _utc(dt: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes; every time stored is UTC, so say so."""
    if dt is not None and dt.tzinfo is None:
        return dt.replace(tzinfo=timezone.utc)
    return dt


def _sa():
    try:
        import sqlalchemy
    except ImportError as exc:  # pragma: no cover - a dependency
        raise PerflabError("the results store needs SQLAlchemy: pip install 'SQLAlchemy>=2'") from exc
    return sqlalchemy


def _resolve_url(url_or_path: str | None) -> tuple[str, str, str | None]:
    """(SQLAlchemy URL, display string, sqlite file path or None) for a --db value."""
    value = (url_or_path or "").strip() or os.environ.get("PERFLAB_DB", "").strip() or DEFAULT_PATH
    if value.startswith(("postgresql://", "postgres://", "postgresql+")):
        if value.startswith("postgres://"):
            value = "postgresql://" + value[len("postgres://"):]
        if value.startswith("postgresql://"):
            value = "postgresql+psycopg://" + value[len("postgresql://"):]
        if value.startswith("postgresql+psycopg://"):
            try:
                import psycopg  # noqa: F401
            except ImportError:
                raise PerflabError(
                    "a PostgreSQL results store needs psycopg 3: pip install 'perflab[postgres]'"
                ) from None
        sa = _sa()
        try:
            display = sa.engine.make_url(value).render_as_string(hide_password=True)
        except Exception:
            raise PerflabError(
                f"cannot parse results store URL {value!r}: use postgresql://USER[:PASS]@HOST[:PORT]/DB"
            ) from None
        return value, display.replace("postgresql+psycopg://", "postgresql://"), None
    if value.startswith("sqlite:///"):
        path = value[len("sqlite:///"):]
    elif "://" in value:
        scheme = value.split("://", 1)[0]
        raise PerflabError(
            f"unsupported results store URL scheme {scheme!r}: use a file path, sqlite:///PATH "
            "or postgresql://USER@HOST/DB"
        )
    else:
        path = value
    if path == ":memory:":
        return "sqlite://", "sqlite in-memory (not kept)", None
    p = Path(path).expanduser().absolute()
    if not p.parent.is_dir():
        raise PerflabError(
            f"cannot open results store {p}: directory {p.parent} does not exist; create it or "
            "pass another --db"
        )
    if p.is_dir():
        raise PerflabError(f"cannot open results store {p}: it is a directory; pass a file path to --db")
    return f"sqlite:///{p}", str(p), str(p)


def _one_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    text = " ".join(str(orig).split())
    return text[:300] or type(orig).__name__


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
            # WAL: readers (perflab report) never block the writer; FULL sync: a committed
            # measurement survives a power cut, not just a crash.
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=FULL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()
    try:
        with engine.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
    except sa.exc.SQLAlchemyError as exc:
        engine.dispose()
        hint = "check the URL or start the server" if sqlite_path is None else "check the path and its permissions"
        raise PerflabError(f"cannot open results store {display}: {_one_line(exc)}; {hint}") from None
    store = Store(engine, display, sqlite_path)
    store._migrate()
    return store


class Terminated(KeyboardInterrupt):
    """SIGTERM turned into an interrupt, so a campaign closes as 'interrupted' (batch systems
    send SIGTERM before SIGKILL at the end of a job's time)."""


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated()


@dataclass
class OpenCampaign:
    """The campaign a ``with store.open_campaign(...)`` block measures into; set ``summary`` to keep it."""

    id: int
    resumed: bool = False
    summary: dict | None = None


class Store(BaselineMethods):
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
            with self.engine.begin() as conn:
                if self.dialect == "postgresql":
                    # Two perflab processes opening a fresh database must not both migrate it.
                    conn.execute(sa.text("SELECT pg_advisory_xact_lock(742114)"))
                vt.create(conn, checkfirst=True)
                have = int(conn.execute(sa.select(sa.func.max(vt.c.version))).scalar() or 0)
                if have > SCHEMA_VERSION:
                    raise PerflabError(
                        f"results store {self.display} has schema version {have}, newer than this "
                        f"perflab knows ({SCHEMA_VERSION}); upgrade perflab (pip install -U perflab) "
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
        return _Tx(self)

    # -- hosts ------------------------------------------------------------------------------

    def add_host(self, metadata: dict, topology: dict | None = None) -> int:
        """Record a machine (idempotent: the same machine gets the same id); return its id."""
        sa = self._sa
        hosts = self.t["hosts"]
        metadata, topology, hostname, fingerprint = host_identity(metadata, topology)
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
        """Open a campaign with status 'running'; return its id."""
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
        with self._write() as conn:
            conn.execute(c.update().where(c.c.id == campaign_id).values(host_id=host_id))

    def finish_campaign(self, campaign_id: int, status: str = "done", summary: dict | None = None) -> None:
        """Close a campaign: status done, interrupted or failed, and the study's summary."""
        if status not in STATUSES:
            raise ValueError(f"campaign status must be one of {STATUSES}, not {status!r}")
        c = self.t["campaigns"]
        values = dict(status=status, summary=_jsonable(summary) if summary is not None else None,
                      finished=None if status == "running" else _now())
        # An update is idempotent: retried as it is.
        rowcount = tx.write(self, lambda conn: conn.execute(
            c.update().where(c.c.id == campaign_id).values(**values)).rowcount)
        if rowcount == 0:
            raise PerflabError(f"no campaign {campaign_id} in {self.display}")

    @contextmanager
    def open_campaign(
        self, study: str, config: dict, host_id: int | None = None, parent_id: int | None = None,
        name: str = "", labels: dict | None = None, resume: int | None = None,
    ) -> Iterator[OpenCampaign]:
        """Open (or reopen, with ``resume``) a campaign and close it as the block ends.

        done when the block finishes, interrupted on Ctrl-C or SIGTERM, failed on any other
        error (with the error's first line in the summary); the exception goes on either way.
        """
        if resume is not None:
            camp = self.resume_campaign(resume)
            if camp.study != study:
                raise PerflabError(f"campaign {resume} is a {camp.study} campaign, not {study}")
            handle = OpenCampaign(id=camp.id, resumed=True)
        else:
            handle = OpenCampaign(id=self.start_campaign(study, config, host_id, parent_id, name, labels))
        previous = None
        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGTERM, _raise_terminated)
        try:
            yield handle
        except KeyboardInterrupt:
            self.finish_campaign(handle.id, "interrupted", summary=handle.summary)
            raise
        except BaseException as exc:
            error = {"error": _one_line(exc) if not isinstance(exc, PerflabError) else str(exc)}
            try:
                self.finish_campaign(handle.id, "failed", summary={**(handle.summary or {}), **error})
            except PerflabError:
                pass  # the store itself failed: the original error says more
            raise
        else:
            self.finish_campaign(handle.id, "done", summary=handle.summary)
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)

    def resume_campaign(self, campaign_id: int) -> Campaign:
        """Mark an interrupted/failed campaign running again; done_keys() says what to skip."""
        c = self.t["campaigns"]
        camp = self.campaign(campaign_id)
        with self._write() as conn:
            conn.execute(c.update().where(c.c.id == campaign_id).values(status="running", finished=None))
        return camp

    def _campaign_query(self) -> Any:
        sa = self._sa
        c, m = self.t["campaigns"], self.t["measurements"]
        n = (sa.select(sa.func.count(m.c.id)).where(m.c.campaign_id == c.c.id)
             .correlate(c).scalar_subquery().label("n_measurements"))
        return sa.select(c, n)

    @staticmethod
    def _campaign(row: Any) -> Campaign:
        return Campaign(
            id=row.id, study=row.study, name=row.name or "", status=row.status,
            config=row.config or {}, summary=row.summary, host_id=row.host_id,
            parent_id=row.parent_id, started=_utc(row.started), finished=_utc(row.finished),
            n_measurements=int(row.n_measurements or 0), labels=row.labels or {},
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

    def campaigns(self, study: str | None = None, parent_id: int | None = None) -> list[Campaign]:
        """Campaigns, oldest first; filtered by study and/or parent campaign."""
        c = self.t["campaigns"]
        q = self._campaign_query()
        if study is not None:
            q = q.where(c.c.study == study)
        if parent_id is not None:
            q = q.where(c.c.parent_id == parent_id)
        with self.engine.connect() as conn:
            return [self._campaign(r) for r in conn.execute(q.order_by(c.c.id))]

    def latest_campaign(self, study: str, status: str | None = "done") -> Campaign | None:
        found = [c for c in self.campaigns(study=study) if status is None or c.status == status]
        return found[-1] if found else None

    # -- measurements -----------------------------------------------------------------------

    def add_measurement(
        self, campaign_id: int, result: RunResult, params: dict | None = None, rep: int = 0,
        label: str = "",
    ) -> int:
        """Store one run; committed before returning so a crash keeps it."""
        values = self._row(campaign_id, result, params, rep, label)
        table = self.t["measurements"]

        def insert(conn: Any) -> int:
            # A bare insert() with a parameter dict: SQLAlchemy compiles it once and caches it,
            # where .values(**values) builds a new statement per run (0.44 -> 0.13 ms per row).
            return int(conn.execute(table.insert(), values).inserted_primary_key[0])

        return tx.write(self, insert, lambda conn: self._committed(conn, values))

    def add_measurements(self, campaign_id: int, runs: list[tuple[RunResult, dict | None, int, str]]) -> None:
        """Store the copies of one concurrent point in one transaction: a crash keeps all or none,
        so a resumed study never finds half a point (result, params, rep, label per copy)."""
        rows = [self._row(campaign_id, *run) for run in runs]
        if rows:
            table = self.t["measurements"]
            tx.write(self, lambda conn: conn.execute(table.insert(), rows),
                     lambda conn: self._committed(conn, rows[0]))

    def _committed(self, conn: Any, values: dict[str, Any]) -> int | None:
        """The id of a row already written (a commit whose answer the lost connection ate)."""
        c = self.t["measurements"].c
        row = conn.execute(self._sa.select(c.id).where(
            c.campaign_id == values["campaign_id"], c.label == values["label"], c.params == values["params"],
            c.rep == values["rep"], c.wall_ns == values["wall_ns"], c.start_ns == values["start_ns"],
        )).first()
        return None if row is None else int(row.id)

    def _row(self, campaign_id: int, result: RunResult, params: dict | None, rep: int, label: str) -> dict[str, Any]:
        values: dict[str, Any] = {name: getattr(result, name) for name in _RESULT_COLUMNS}
        values["wall_ns"] = int(values["wall_ns"])
        values.update(
            campaign_id=campaign_id, label=label or "", params=canonical_params(params), rep=int(rep),
            metrics=_jsonable(result.metrics or {}), counters=_jsonable(result.counters or {}),
            energy=_jsonable(result.energy) if result.energy else None,
            health=_jsonable(result.health) if result.health else None,
            failure=result.failure, created=_now(),
        )
        return values

    def measurements(self, campaign_id: int) -> list[Measurement]:
        """All runs of a campaign in the order they were recorded."""
        sa = self._sa
        m = self.t["measurements"]
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(m).where(m.c.campaign_id == campaign_id).order_by(m.c.id)).all()
        return [self._measurement(r) for r in rows]

    def iter_measurements(self, campaign_id: int) -> Iterator[Measurement]:
        yield from self.measurements(campaign_id)

    @staticmethod
    def _measurement(row: Any) -> Measurement:
        known = {f.name for f in fields(RunResult)}
        kw = {name: getattr(row, name) for name in _RESULT_COLUMNS if name in known}
        kw["timed_out"] = bool(kw.get("timed_out"))
        kw["suspect"] = bool(kw.get("suspect"))
        kw["energy"] = {k: v for k, v in (row.energy or {}).items() if v is not None}
        kw["health"] = dict(row.health or {})
        kw["stdout_tail"] = kw.get("stdout_tail") or ""
        kw["stderr_tail"] = kw.get("stderr_tail") or ""
        kw["metrics"] = {k: v for k, v in (row.metrics or {}).items() if v is not None}
        kw["counters"] = {k: v for k, v in (row.counters or {}).items() if v is not None}
        return Measurement(
            id=row.id, campaign_id=row.campaign_id, label=row.label, params=json.loads(row.params),
            rep=row.rep, result=RunResult(**kw), created=_utc(row.created),
        )

    def done_keys(self, campaign_id: int) -> set[tuple[str, str, int]]:
        """(label, canonical params JSON, rep) of every stored run: what a resume may skip."""
        sa = self._sa
        m = self.t["measurements"]
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(m.c.label, m.c.params, m.c.rep).where(m.c.campaign_id == campaign_id)
            ).all()
        return {(r.label, r.params, int(r.rep)) for r in rows}

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


class _Tx:
    """engine.begin() whose database errors become one-line PerflabErrors."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.cm = store.engine.begin()

    def __enter__(self) -> Any:
        try:
            return self.cm.__enter__()
        except self.store._sa.exc.OperationalError as exc:
            raise PerflabError(
                f"results store {self.store.display} is unreachable: {_one_line(exc)}; "
                f"{tx.RESUME_HINT}"
            ) from None

    def __exit__(self, et: Any, ev: Any, tb: Any) -> bool:
        op_error = self.store._sa.exc.OperationalError
        try:
            self.cm.__exit__(et, ev, tb)
        except op_error as exc:
            ev = exc
        if isinstance(ev, op_error):
            raise PerflabError(
                f"results store {self.store.display} failed to write: {_one_line(ev)}; "
                f"{tx.RESUME_HINT}"
            ) from None
        return False
