"""The write path of a SQLite results store through the standard library's sqlite3.

``perflab run`` of a short command is dominated by fixed costs: importing SQLAlchemy alone takes
longer (~140 ms) than hyperfine's whole run. A store file that already has the current schema
needs no DDL, and a new file is given the current schema by plain statements (schema.SQLITE_SCHEMA),
so its writes (host, campaign, one row per run) go through one sqlite3 connection kept open, with
statements written for the schema in schema.py; everything else (reads, resume, an older file that
needs migrating) goes to the full SQLAlchemy Store, opened when first needed. Rows are written in
the same format SQLAlchemy writes them (JSON text, UTC datetimes, 0/1 booleans), so either reads
what the other wrote.

Durability: WAL with synchronous=NORMAL. A run measured alone is committed (its own
transaction) before the next run starts; runs that go back to back in the spawn server are
journalled by it before the next starts (measure/journal.py) and committed here a group at a
time. Either way a crash of perflab (kill -9, out of memory, Ctrl-C) loses at most the run in
flight. A power cut or kernel crash may lose the last transactions since the WAL was last synced
(at each checkpoint), never the database's consistency. synchronous=FULL would add an fsync per
run: 3.5 ms on this VM's disk, four times the run of `true` itself.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from perflab import store as _package
from perflab.errors import PerflabError
from perflab.model.series import series_length
from perflab.model import RunResult
from perflab.platform.machine import campaign_labels
from perflab.store import envelope
from perflab.store.campaigns import CampaignMethods
from perflab.store.values import _RESULT_COLUMNS, STATUSES, canonical_params, dumps, host_identity
from perflab.store.url import _resolve_url
from perflab.store.schema import SCHEMA_VERSION, SQLITE_SCHEMA

if TYPE_CHECKING:
    from perflab.store.db import Store

_MEASUREMENT_COLUMNS = (*_RESULT_COLUMNS, "campaign_id", "label", "params", "rep", "metrics",
                        "counters", "energy", "health", "failure", "created")
_INSERT = (f"INSERT INTO measurements ({', '.join(_MEASUREMENT_COLUMNS)}) "
           f"VALUES ({', '.join('?' * len(_MEASUREMENT_COLUMNS))})")


def _now() -> str:
    """UTC now as SQLAlchemy's SQLite DateTime stores it ('2026-11-23 11:59:25.352692')."""
    return datetime.now(timezone.utc).isoformat(sep=" ", timespec="microseconds")[:26]


def open_fast(url_or_path: str | None = None) -> "LiteStore | Store":
    """A LiteStore for a SQLite file at the current schema (a new file is given it), else the full Store."""
    url, display, path = _resolve_url(url_or_path)
    if path is None:
        return _package.open_store(url_or_path)
    try:
        conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    except sqlite3.Error:
        return _package.open_store(url_or_path)
    deadline = time.monotonic() + 30
    while True:
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version == 0:
                version = _create(conn)
            break
        except sqlite3.OperationalError as exc:
            # Two perflabs creating one new file: switching it to WAL takes the file alone, and
            # there SQLite answers 'locked' at once instead of waiting out busy_timeout (one of
            # two racing `perflab run`s failed so): wait, then read the version the other wrote.
            if "locked" in str(exc) and time.monotonic() < deadline:
                time.sleep(0.02)
                continue
            conn.close()
            return _package.open_store(url_or_path)  # the full store says what is wrong in one line
        except sqlite3.Error:
            conn.close()
            return _package.open_store(url_or_path)
    if version != SCHEMA_VERSION:
        conn.close()
        return _package.open_store(url_or_path)
    return LiteStore(conn, display, path)


def _create(conn: sqlite3.Connection) -> int:
    """Give an empty file the current schema (schema.SQLITE_SCHEMA, as the migrations leave it); its
    user_version back. A file with tables but no version is left to the full store to judge."""
    from perflab import __version__

    conn.execute("PRAGMA busy_timeout=30000")  # another perflab creating the same file waits
    # Without waiting for the disk: switching a new file to WAL and committing its schema cost
    # five fsyncs (~15 ms here). A power cut before the store's first checkpoint (at the latest
    # when perflab closes it) can leave the new file empty, losing what that first run measured;
    # LiteStore sets synchronous=NORMAL for every write after this.
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if version == 0 and tables == 0:
            for statement in SQLITE_SCHEMA:
                conn.execute(statement)
            conn.executemany("INSERT INTO schema_version (version, applied, perflab_version) VALUES (?, ?, ?)",
                             [(n, _now(), __version__) for n in range(1, SCHEMA_VERSION + 1)])
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            version = SCHEMA_VERSION
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return version


class LiteStore:
    """The writes studies make, on sqlite3; every other Store method on the full Store."""

    dialect = "sqlite"
    open_campaign = CampaignMethods.open_campaign  # uses only the methods below

    def __init__(self, conn: sqlite3.Connection, display: str, path: str) -> None:
        self._conn, self.display, self.path = conn, display, path
        self._full: Store | None = None  # opened when first needed
        self._lock = threading.Lock()  # a host capture may finish on another thread
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON", "busy_timeout=30000"):
            conn.execute(f"PRAGMA {pragma}")

    def __repr__(self) -> str:
        return f"LiteStore({self.display})"

    def __getattr__(self, name: str) -> Any:
        if self._full is None:
            self._full = _package.open_store(self.path)
        return getattr(self._full, name)

    def __enter__(self) -> "LiteStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._conn.close()
        if self._full is not None:
            self._full.close()

    def _write(self, sql: str, args: tuple) -> sqlite3.Cursor:
        """One statement, one transaction, committed before returning."""
        return self._transaction(lambda conn: conn.execute(sql, args))

    def _transaction(self, work: Any) -> Any:
        """``work(conn)`` inside BEGIN IMMEDIATE..COMMIT (the write lock taken up front)."""
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                out = work(self._conn)
                self._conn.execute("COMMIT")
                return out
            except sqlite3.Error as exc:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise PerflabError(f"results store {self.display} failed to write: {exc}; check the "
                                   "disk and rerun (committed measurements are kept)") from None
            except BaseException:
                # Ctrl-C or a batch system's SIGTERM in the middle of a write: undo it, or the
                # campaign could not be closed as interrupted (BEGIN inside an open transaction).
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

    def add_host(self, metadata: dict, topology: dict | None = None) -> int:
        """Record a machine (the same machine gets the same id, as Store.add_host)."""
        metadata, topology, hostname, fingerprint = host_identity(metadata, topology)

        def upsert(conn: sqlite3.Connection) -> int:
            # one transaction: two processes recording the same machine get the same row
            row = conn.execute("SELECT id FROM hosts WHERE fingerprint = ?", (fingerprint,)).fetchone()
            if row is not None:
                conn.execute("UPDATE hosts SET metadata = ? WHERE id = ?", (dumps(metadata), row[0]))
                return int(row[0])
            return int(conn.execute(  # type: ignore[arg-type]  # an INSERT always sets lastrowid
                "INSERT INTO hosts (hostname, fingerprint, metadata, topology, created) VALUES (?, ?, ?, ?, ?)",
                (hostname, fingerprint, dumps(metadata), None if topology is None else dumps(topology),
                 _now())).lastrowid)

        return int(self._transaction(upsert))

    def start_campaign(self, study: str, config: dict, host_id: int | None = None,
                       parent_id: int | None = None, name: str = "", labels: dict | None = None) -> int:
        labels = {**campaign_labels(), **(labels or {})}  # as Store.start_campaign: fleet, Slurm ids
        cur = self._write(
            "INSERT INTO campaigns (study, name, status, config, summary, host_id, parent_id, started, "
            "labels) VALUES (?, ?, 'running', ?, NULL, ?, ?, ?, ?)",
            (study, name or "", dumps(config or {}), host_id, parent_id, _now(),
             dumps(labels) if labels else None))
        return int(cur.lastrowid)  # type: ignore[arg-type]  # an INSERT always sets lastrowid

    def set_campaign_host(self, campaign_id: int, host_id: int) -> None:
        self._write("UPDATE campaigns SET host_id = ? WHERE id = ?", (host_id, campaign_id))

    def finish_campaign(self, campaign_id: int, status: str = "done", summary: dict | None = None) -> None:
        if status not in STATUSES:
            raise ValueError(f"campaign status must be one of {STATUSES}, not {status!r}")

        def close(conn: sqlite3.Connection) -> sqlite3.Cursor:
            # the study names the result in its envelope; read in the write's transaction, under
            # the lock a host capture on another thread also takes
            row = conn.execute("SELECT study FROM campaigns WHERE id = ?", (campaign_id,)).fetchone()
            stored = None if summary is None else dumps(envelope.wrap(row[0], summary) if row else summary)
            return conn.execute("UPDATE campaigns SET status = ?, summary = ?, finished = ? WHERE id = ?",
                                (status, stored, None if status == "running" else _now(), campaign_id))

        cur = self._transaction(close)
        if cur.rowcount == 0:
            raise PerflabError(f"no campaign {campaign_id} in {self.display}")

    def resume_campaign(self, campaign_id: int, owner: dict | None = None) -> Any:
        camp = self.campaign(campaign_id)
        labels = {**(camp.labels or {}), "owner": owner} if owner else camp.labels
        self._write("UPDATE campaigns SET status = 'running', finished = NULL, labels = ? WHERE id = ?",
                    (dumps(labels) if labels else None, campaign_id))
        return camp

    def _row(self, campaign_id: int, result: RunResult, params: dict | None, rep: int, label: str) -> tuple:
        r = result
        return (*[int(v) if isinstance(v, bool) else v for v in (getattr(r, c) for c in _RESULT_COLUMNS)],
                campaign_id, label or "", canonical_params(params) if params else "{}", int(rep),
                dumps(r.metrics) if r.metrics else "{}", dumps(r.counters) if r.counters else "{}",
                dumps(r.energy) if r.energy else None, dumps(r.health) if r.health else None,
                r.failure, _now())

    def add_measurement(self, campaign_id: int, result: RunResult, params: dict | None = None,
                        rep: int = 0, label: str = "") -> int:
        """Store one run; committed before returning so a crash keeps it."""
        row = self._row(campaign_id, result, params, rep, label)
        if result.series:  # the row and its series in one transaction
            return int(self._transaction(lambda conn: self._insert(conn, campaign_id, row, result)))
        with self._lock:
            try:
                # One statement outside BEGIN..COMMIT is its own transaction: one call, not three.
                return int(self._conn.execute(_INSERT, row).lastrowid)  # type: ignore[arg-type]  # set by an INSERT
            except sqlite3.Error as exc:
                raise PerflabError(f"results store {self.display} failed to write: {exc}; check the "
                                   "disk and rerun (committed measurements are kept)") from None

    def add_measurements(self, campaign_id: int, runs: list[tuple[RunResult, dict | None, int, str]]) -> None:
        """The copies of one concurrent point in one transaction: a crash keeps all or none."""
        rows = [self._row(campaign_id, *run) for run in runs]
        if rows and any(run[0].series for run in runs):
            self._transaction(lambda conn: [self._insert(conn, campaign_id, row, run[0]) for row, run in zip(rows, runs)])
        elif rows:
            self._transaction(lambda conn: conn.executemany(_INSERT, rows))

    @staticmethod
    def _insert(conn: sqlite3.Connection, campaign_id: int, row: tuple, result: RunResult) -> int:
        """One run's row and its per-event series (store/schema.py run_series)."""
        mid = int(conn.execute(_INSERT, row).lastrowid)  # type: ignore[arg-type]  # set by an INSERT
        if result.series:
            conn.execute("INSERT INTO run_series (measurement_id, campaign_id, events, data) VALUES (?, ?, ?, ?)",
                         (mid, campaign_id, series_length(result.series), result.series))
        return mid
