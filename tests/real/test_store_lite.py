"""A new SQLite store made by perflab run's write path (store/lite.py, plain sqlite3) is the store
the migrations make (store/db.py through SQLAlchemy): same tables, columns, indexes, keys and
versions, so every reader and a later migration treat the two alike."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest

from perflab.errors import PerflabError
from perflab.store import SCHEMA_VERSION, open_store
from perflab.store.lite import LiteStore, open_fast


def _shape(path) -> dict:
    """Everything SQLite knows of a schema but the text of its CREATE statements."""
    conn = sqlite3.connect(path)
    try:
        out: dict = {"user_version": conn.execute("PRAGMA user_version").fetchone()[0]}
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"):
            indexes = {}
            for row in conn.execute(f"PRAGMA index_list({name})"):
                indexes[row[1]] = (row[2], row[3], tuple(r[2] for r in conn.execute(f"PRAGMA index_info({row[1]})")))
            out[name] = {
                "columns": conn.execute(f"PRAGMA table_info({name})").fetchall(),
                "foreign_keys": sorted(r[2:] for r in conn.execute(f"PRAGMA foreign_key_list({name})")),
                "indexes": indexes,
            }
        out["versions"] = conn.execute("SELECT version, perflab_version FROM schema_version "
                                       "ORDER BY version").fetchall()
        return out
    finally:
        conn.close()


def test_a_new_file_gets_the_schema_the_migrations_make(tmp_path):
    migrated, fast = tmp_path / "migrated.db", tmp_path / "fast.db"
    open_store(str(migrated)).close()
    store = open_fast(str(fast))
    assert isinstance(store, LiteStore)
    assert store._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store._conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL after the creation
    store.close()
    assert _shape(fast) == _shape(migrated)
    assert _shape(fast)["user_version"] == SCHEMA_VERSION
    with open_store(str(fast)) as full:  # the full store finds nothing to migrate
        assert full.schema_version() == SCHEMA_VERSION
        with full.open_campaign("run", {"a": 1}) as camp:
            pass
        assert full.campaign(camp.id).status == "done"


def test_a_new_store_is_created_without_sqlalchemy(tmp_path):
    code = ("import sys; from perflab.store.lite import open_fast, LiteStore; "
            f"s = open_fast({str(tmp_path / 'n.db')!r}); print(isinstance(s, LiteStore), 'sqlalchemy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "False"]


def test_two_processes_creating_one_file_at_once_both_get_it_whole(tmp_path):
    db = str(tmp_path / "race.db")
    code = ("import sys; from perflab.store.lite import open_fast; s = open_fast(sys.argv[1]); "
            "h = s.add_host({'hostname': 'h', 'cpu_model': 'x'}, None); s.close(); print(h)")
    procs = [subprocess.Popen([sys.executable, "-c", code, db], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(4)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1] for o in outs]
    assert {o[0].strip() for o in outs} == {"1"}  # one host row, the same id for all
    with open_store(db) as full:
        assert full.schema_version() == SCHEMA_VERSION


def test_what_is_not_a_new_file_goes_to_the_full_store(tmp_path):
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"not a database at all" * 100)
    with pytest.raises(PerflabError) as err:
        open_fast(str(corrupt))
    assert "\n" not in str(err.value) and str(corrupt) in str(err.value)
    newer = tmp_path / "newer.db"
    open_store(str(newer)).close()
    conn = sqlite3.connect(newer)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.execute("INSERT INTO schema_version (version, applied) VALUES (?, '2030-01-01')", (SCHEMA_VERSION + 1,))
    conn.commit()
    conn.close()
    with pytest.raises(PerflabError, match="newer than this perflab knows"):
        open_fast(str(newer))
    # tables but no version (a file of something else, or a store from before versions): the
    # migrations judge it, as they did before the quick creation
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE notes (x)")
    conn.commit()
    conn.close()
    store = open_fast(str(other))
    assert not isinstance(store, LiteStore)
    store.close()
    assert sqlite3.connect(other).execute("SELECT name FROM sqlite_master WHERE name = 'notes'").fetchone()
