"""The store under faults: a PostgreSQL restart mid-campaign, a full disk, a read-only file."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import threading
import time

import pytest

from perflab.errors import PerflabError
from perflab.model import RunResult
from perflab.store import open_store

from tests.conftest import PgServer


def _result(i: int) -> RunResult:
    return RunResult(wall_ns=1000 + i, user_s=0, sys_s=0, maxrss_kb=1, minflt=0, majflt=0, nvcsw=0,
                     nivcsw=0, exit_code=0, start_ns=i, stderr_tail="x" * 200)


@pytest.fixture
def own_server():
    """A PostgreSQL server of the test's own, which the test may stop and start."""
    server = PgServer()
    try:
        yield server
    finally:
        server.destroy()


@pytest.mark.postgres
def test_postgres_restart_mid_campaign_loses_and_duplicates_nothing(monkeypatch, own_server):
    server = own_server  # stopped and started below
    url = server.create_db("faults")
    monkeypatch.setenv("PERFLAB_DB_RETRY_S", "60")
    with open_store(url) as store:
        cid = store.start_campaign("run", {})
        for i in range(20):
            store.add_measurement(cid, _result(i), {"i": i}, rep=0, label="a")
        # Restart the server while the next writes are attempted: they wait and go through.
        restart = threading.Thread(target=lambda: (server.stop("fast"), time.sleep(1.5), server.start()))
        restart.start()
        i, slowest = 20, 0.0
        while restart.is_alive() or i < 60:
            t0 = time.monotonic()
            store.add_measurement(cid, _result(i), {"i": i}, rep=0, label="a")
            slowest = max(slowest, time.monotonic() - t0)
            i += 1
            time.sleep(0.01)
        store.finish_campaign(cid, "done")
        got = store.measurements(cid)
    assert slowest > 1.0  # a write really waited for the server to come back
    assert sorted(m.params["i"] for m in got) == list(range(i))  # none lost, none twice


@pytest.mark.postgres
def test_postgres_gone_for_good_is_one_line(monkeypatch, own_server):
    server = own_server  # stopped and started below
    url = server.create_db("gone")
    monkeypatch.setenv("PERFLAB_DB_RETRY_S", "1")
    with open_store(url) as store:
        cid = store.start_campaign("run", {})
        store.add_measurement(cid, _result(0), {"i": 0})
        server.stop("fast")
        t0 = time.monotonic()
        with pytest.raises(PerflabError) as err:
            store.add_measurement(cid, _result(1), {"i": 1})
        assert time.monotonic() - t0 < 10
    msg = str(err.value)
    assert "\n" not in msg and "unreachable after retrying for 1 s" in msg and "perflab resume" in msg
    assert "postgres@" not in msg or ":" not in msg.split("postgres@")[0][-1:]  # no password to hide here


def _mount_tmpfs(path: str, size: str) -> bool:
    os.makedirs(path, exist_ok=True)
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", path],
                          capture_output=True).returncode == 0


def test_disk_full_is_one_line_and_keeps_what_was_stored(tmp_path):
    mnt = str(tmp_path / "small")
    if not _mount_tmpfs(mnt, "400k"):
        pytest.skip("cannot mount a size-limited tmpfs here (needs root): see the injected-fault test")
    try:
        db = os.path.join(mnt, "s.db")
        stored = 0
        with open_store(db) as store:
            cid = store.start_campaign("run", {})
            with pytest.raises(PerflabError) as err:
                for i in range(100000):
                    store.add_measurement(cid, _result(i), {"i": i, "pad": "y" * 300})
                    stored += 1
        msg = str(err.value)
        assert "\n" not in msg and "full" in msg and "perflab resume" in msg
        conn = sqlite3.connect(db)
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("SELECT count(*) FROM measurements").fetchone()[0] == stored > 0
        conn.close()
    finally:
        subprocess.run(["umount", "-l", mnt], capture_output=True)


def test_read_only_store_is_one_line(tmp_path):
    db = str(tmp_path / "s.db")
    with open_store(db) as store:
        cid = store.start_campaign("run", {})
        store.add_measurement(cid, _result(0), {"i": 0})
    mnt = str(tmp_path / "ro")
    os.makedirs(mnt)
    # A read-only bind mount: root ignores file modes, but not a read-only mount.
    if subprocess.run(["mount", "--bind", str(tmp_path), mnt], capture_output=True).returncode != 0:
        pytest.skip("cannot bind-mount here (needs root)")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", mnt], check=True, capture_output=True)
        with pytest.raises(PerflabError) as err:
            with open_store(os.path.join(mnt, "s.db")) as store:
                store.add_measurement(cid, _result(1), {"i": 1})
        assert "\n" not in str(err.value) and "s.db" in str(err.value)
    finally:
        subprocess.run(["umount", "-l", mnt], capture_output=True)
    with open_store(db) as store:
        assert len(store.measurements(cid)) == 1
