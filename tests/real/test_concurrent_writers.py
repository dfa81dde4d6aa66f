"""Several perflab processes writing one store at once: no row lost or duplicated, no lock error.

The fleet's case: 8 processes into one PostgreSQL store (8 nodes of a farm), and 2 into one
SQLite file (two studies started side by side on a workstation). Real `perflab run` processes,
real servers; the rows are counted afterwards.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from perflab.store import open_store

RUNS = 12
SRC = str(Path(__file__).resolve().parents[2] / "src")


def _writers(db: str, n: int, tmp_path: Path) -> list[subprocess.CompletedProcess]:
    env = {**os.environ, "PYTHONPATH": SRC, "PERFLAB_CACHE": str(tmp_path / "cache")}
    procs = []
    for i in range(n):
        env_i = {**env, "PERFLAB_HOST_LABEL": f"writer-{i}", "PERFLAB_FLEET": "concurrent",
                 "PERFLAB_FLEET_SLOT": str(i)}
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "perflab", "run", "--db", db, "--runs", str(RUNS), "-n", f"w{i}",
             "--", "true"],
            env=env_i, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path))
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=240)
        out.append(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr))
    return out


def _check(db: str, n: int, results: list[subprocess.CompletedProcess]) -> None:
    for r in results:
        text = r.stdout + r.stderr
        assert "database is locked" not in text and "Traceback" not in text, text[-2000:]
        assert r.returncode == 0, text[-2000:]
    with open_store(db) as store:
        camps = [c for c in store.campaigns(study="run") if c.labels.get("fleet") == "concurrent"]
        assert sorted(c.labels["fleet_slot"] for c in camps) == sorted(str(i) for i in range(n))
        assert all(c.status == "done" for c in camps)
        total = 0
        for c in camps:
            ms = store.measurements(c.id)
            keys = [(m.label, m.rep, m.result.start_ns) for m in ms]
            assert len(ms) == RUNS, f"campaign {c.id}: {len(ms)} rows, not {RUNS}"
            assert len(set(keys)) == len(keys), "a run stored twice"
            total += len(ms)
        assert total == n * RUNS
        sa = store._sa
        with store.engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT count(*) FROM measurements")).scalar()
        assert rows == n * RUNS


@pytest.mark.postgres
def test_eight_writers_one_postgresql_store(postgres_url, tmp_path):
    _check(postgres_url, 8, _writers(postgres_url, 8, tmp_path))


def test_two_writers_one_sqlite_file(tmp_path):
    db = str(tmp_path / "shared.db")
    _check(db, 2, _writers(db, 2, tmp_path))
    with open_store(db) as store, store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"


_RACE = """
import sys
from perflab.model import RunResult
from perflab.store import open_store
db, i = sys.argv[1], int(sys.argv[2])
store = open_store(db)
print("ready", flush=True)
sys.stdin.readline()  # the barrier: every writer is released by one line from the test, together
for k in range(10):
    host = store.add_host({"hostname": f"node{k}", "cpu_model": "same"}, None)
    cid = store.start_campaign("run", {"writer": i}, host_id=host, labels={"fleet": "race", "fleet_slot": str(i)})
    for rep in range(5):
        store.add_measurement(cid, RunResult(wall_ns=1000 + rep, user_s=0.0, sys_s=0.0, maxrss_kb=1, minflt=0, majflt=0, nvcsw=0, nivcsw=0, exit_code=0), {"k": k}, rep=rep, label=f"w{i}")
    store.finish_campaign(cid, "done")
print("ok")
"""


def _race(db: str, n: int, tmp_path: Path) -> None:
    script = tmp_path / "race.py"
    script.write_text(_RACE)
    env = {**os.environ, "PYTHONPATH": SRC}
    procs = [subprocess.Popen([sys.executable, str(script), db, str(i)], env=env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(n)]
    # Released when all have opened the store, however long their starts took: a barrier in wall
    # time (a spin until a chosen instant) burnt CPU the writers' starts needed, and let a writer
    # that started late miss the race.
    for p in procs:
        assert p.stdout.readline() == "ready\n", p.stderr.read()[-2000:]
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and "Traceback" not in err, err[-2000:]
    with open_store(db) as store:
        hosts = {store.host(c.host_id)["hostname"] for c in store.campaigns(study="run")}
        assert hosts == {f"node{k}" for k in range(10)}
        sa = store._sa
        with store.engine.connect() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM hosts")).scalar() == 10
            assert conn.execute(sa.text("SELECT count(*) FROM campaigns")).scalar() == n * 10
            assert conn.execute(sa.text("SELECT count(*) FROM measurements")).scalar() == n * 10 * 5
            dup = conn.execute(sa.text(
                "SELECT count(*) FROM (SELECT campaign_id, label, params, rep FROM measurements "
                "GROUP BY campaign_id, label, params, rep HAVING count(*) > 1) d")).scalar()
            assert dup == 0


@pytest.mark.postgres
def test_racing_writers_postgresql(postgres_url, tmp_path):
    """8 writers released at one instant record the same 10 machines: one host row each."""
    _race(postgres_url, 8, tmp_path)


def test_racing_writers_sqlite(tmp_path):
    """2 writers on one fresh SQLite file: migration, host dedup and inserts without lock errors."""
    _race(str(tmp_path / "race.db"), 2, tmp_path)
