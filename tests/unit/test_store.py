"""The results store on SQLite alone, in tmp_path: WAL and foreign keys, the default path, bad URLs
in one line, an interrupted write (both backends and a crashed writer: tests/real/test_store.py)."""

from __future__ import annotations

import pytest

from perflab.errors import PerflabError
from perflab.model import RunResult
from perflab.store import SCHEMA_VERSION, open_store


def _result(wall_ns: int = 1_000_000, **kw) -> RunResult:
    base = dict(wall_ns=wall_ns, user_s=0.25, sys_s=0.01, maxrss_kb=2048, minflt=10, majflt=1,
                nvcsw=3, nivcsw=4, exit_code=0, start_ns=5, end_ns=5 + wall_ns,
                metrics={"events_per_s": 123.5}, counters={"task-clock": 0.9})
    base.update(kw)
    return RunResult(**base)


def test_sqlite_is_wal_with_foreign_keys(tmp_path):
    with open_store(f"sqlite:///{tmp_path}/x.db") as store:
        assert store.display == str(tmp_path / "x.db")
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert conn.exec_driver_sql("PRAGMA user_version").scalar() == SCHEMA_VERSION
        import sqlalchemy as sa

        with pytest.raises(sa.exc.IntegrityError):
            store.add_measurement(12345, _result(), {})


def test_default_path_is_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PERFLAB_DB", raising=False)
    with open_store(None) as store:
        assert store.display == str(tmp_path / "perflab.db")
    assert (tmp_path / "perflab.db").exists()


@pytest.mark.parametrize("url,message", [
    ("postgresql://nobody@127.0.0.1:1/none", r"cannot open results store postgresql://nobody@127.0.0.1:1/none: .*; check the URL or start the server"),
    ("mysql://x@y/z", "unsupported results store URL scheme 'mysql'"),
    ("/nonexistent-dir/sub/perflab.db", "directory /nonexistent-dir/sub does not exist"),
])
def test_bad_store_urls(url, message):
    with pytest.raises(PerflabError, match=message) as info:
        open_store(url)
    assert "\n" not in str(info.value)


def test_password_hidden_in_errors():
    with pytest.raises(PerflabError) as info:
        open_store("postgresql://u:secret@127.0.0.1:1/db")
    assert "secret" not in str(info.value)


def test_an_interrupt_in_the_middle_of_a_write_still_closes_the_campaign_as_interrupted(tmp_path):
    # SIGTERM (which a campaign turns into Terminated) or Ctrl-C can land while a write holds the
    # store's transaction open. The write is undone and the campaign closes as 'interrupted';
    # before, closing it began a transaction inside the open one and perflab ended as a failed
    # write with exit status 2 (seen once in test_session's SIGTERM test under `make test`).
    from perflab.store.campaigns import Terminated
    from perflab.store.lite import LiteStore, open_fast

    db = str(tmp_path / "s.db")
    open_store(db).close()
    store = open_fast(db)
    assert isinstance(store, LiteStore)
    cid = None

    def half_written(conn):
        conn.execute("UPDATE campaigns SET name = 'half-written' WHERE id = ?", (cid,))
        raise Terminated()

    with pytest.raises(KeyboardInterrupt):
        with store.open_campaign("run", {}) as camp:
            cid = camp.id
            store._transaction(half_written)
    store.close()
    with open_store(db) as full:
        closed = full.campaign(cid)
    assert closed.status == "interrupted" and closed.name == ""
