"""Results store on both backends: SQLite in tmp_path and a real PostgreSQL server (SQLite alone:
tests/unit/test_store.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from perflab.errors import PerflabError
from perflab.store import SCHEMA_VERSION, canonical_params, open_store
from tests.unit.test_store import _result


def test_roundtrip(store_url):
    with open_store(store_url) as store:
        assert store.schema_version() == SCHEMA_VERSION
        host = store.add_host({"hostname": "node1", "cpu_model": "X", "load": 0.1}, {"cpus": [0, 1]})
        # Same machine, another load average: same host row.
        assert store.add_host({"hostname": "node1", "cpu_model": "X", "load": 3.0}, {"cpus": [0, 1]}) == host
        assert store.add_host({"hostname": "node2", "cpu_model": "X"}, None) != host
        assert store.host(host)["metadata"]["load"] == 3.0

        parent = store.start_campaign("lab", {"workload": "minihlt"}, host_id=host, name="nightly")
        cid = store.start_campaign("instances", {"n": [1, 2]}, host_id=host, parent_id=parent)
        r1 = _result(wall_ns=2_000_000_000, stdout_tail="out", metrics={"events_per_s": 7.0, "bad": float("nan")})
        r2 = _result(exit_code=None, signal=9, timed_out=True, stderr_tail="killed\n")
        m1 = store.add_measurement(cid, r1, {"n": 2, "cpu": 1}, rep=0, label="minihlt")
        m2 = store.add_measurement(cid, r2, {"cpu": 1, "n": 2}, rep=1, label="minihlt")
        assert m2 > m1
        got = store.measurements(cid)
        assert [m.id for m in got] == [m1, m2]
        assert got[0].params == {"cpu": 1, "n": 2}
        assert got[0].result.wall_ns == 2_000_000_000  # beyond 32 bits
        assert got[0].result.metrics == {"events_per_s": 7.0}  # NaN is not stored
        assert got[0].result.counters == {"task-clock": 0.9}
        assert got[0].result.stdout_tail == "out"
        assert got[1].result.signal == 9 and got[1].result.timed_out and not got[1].result.ok
        assert got[1].result.stderr_tail == "killed\n"

        store.finish_campaign(cid, "done", {"optimum_throughput": 42.0, "verdict": "ok", "inf": float("inf")})
        c = store.campaign(cid)
        assert c.status == "done" and c.finished is not None and c.finished >= c.started
        assert c.summary == {"optimum_throughput": 42.0, "verdict": "ok", "inf": None}
        assert c.n_measurements == 2 and c.parent_id == parent and c.config == {"n": [1, 2]}
        assert [x.id for x in store.campaigns(study="instances")] == [cid]
        assert [x.id for x in store.campaigns(parent_id=parent)] == [cid]
        assert store.campaign(parent).name == "nightly"
        assert store.campaign(parent).status == "running"
        assert store.latest_campaign("instances").id == cid

        with pytest.raises(PerflabError, match="no campaign 999"):
            store.campaign(999)
        with pytest.raises(ValueError):
            store.finish_campaign(cid, "weird")


def test_artifacts(store_url, tmp_path):
    f = tmp_path / "perf.data"
    f.write_bytes(b"abc")
    with open_store(store_url) as store:
        cid = store.start_campaign("profile", {})
        aid = store.add_artifact(cid, "perf.data", str(f), {"event": 3})
        (a,) = store.artifacts(cid)
        assert a.id == aid and a.size == 3 and a.meta == {"event": 3}
        assert a.sha256 == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_resume_keys(store_url):
    with open_store(store_url) as store:
        cid = store.start_campaign("cores", {})
        for cpu in (0, 1):
            for rep in range(2):
                store.add_measurement(cid, _result(), {"cpu": cpu, "variant": "-O2"}, rep=rep, label="w")
        store.finish_campaign(cid, "interrupted")
        keys = store.done_keys(cid)
        assert len(keys) == 4
        # The key does not depend on the order the study built its params dict in.
        assert ("w", canonical_params({"variant": "-O2", "cpu": 1}), 1) in keys
        assert ("w", canonical_params({"variant": "-O2", "cpu": 2}), 0) not in keys
        camp = store.resume_campaign(cid)
        assert camp.status == "interrupted"
        assert store.campaign(cid).status == "running" and store.campaign(cid).finished is None


def test_measurement_survives_crash(store_url):
    """A writer killed without closing or finishing the campaign leaves its measurements."""
    code = textwrap.dedent(f"""
        import os
        from perflab.store import open_store
        from perflab.model import RunResult
        s = open_store({store_url!r})
        cid = s.start_campaign("run", {{"argv": ["true"]}})
        s.add_measurement(cid, RunResult(wall_ns=7, user_s=0, sys_s=0, maxrss_kb=1, minflt=0,
                          majflt=0, nvcsw=0, nivcsw=0, exit_code=0), {{"k": 1}}, rep=0, label="x")
        print(cid, flush=True)
        os._exit(9)  # no close, no finish_campaign, no atexit
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 9, proc.stderr
    cid = int(proc.stdout.split()[0])
    with open_store(store_url) as store:
        c = store.campaign(cid)
        assert c.status == "running"
        (m,) = store.measurements(cid)
        assert m.result.wall_ns == 7 and m.label == "x" and m.params == {"k": 1}


def _make_v1(url: str) -> None:
    """Build a store as perflab with schema version 1 left it, with one campaign in it."""
    import sqlalchemy as sa

    from perflab.store import schema
    from perflab.store.values import _now
    from perflab.store.url import _resolve_url

    engine = sa.create_engine(_resolve_url(url)[0])
    with engine.begin() as conn:
        vt = schema.version_table(sa)
        vt.create(conn)
        schema.MIGRATIONS[1](conn, sa)
        conn.execute(vt.insert().values(version=1, applied=_now(), perflab_version="0.0.1"))
        conn.execute(sa.text(
            "INSERT INTO campaigns (study, status, config, started) VALUES ('run', 'done', '{\"x\": 1}', :t)"),
            {"t": _now()})
        conn.execute(sa.text(
            "INSERT INTO measurements (campaign_id, label, params, rep, wall_ns, user_s, sys_s, maxrss_kb,"
            " minflt, majflt, nvcsw, nivcsw, exit_code, timed_out, start_ns, end_ns, created)"
            " VALUES (1, 'old', '{}', 0, 99, 0, 0, 1, 0, 0, 0, 0, 0, false, 0, 0, :t)"), {"t": _now()})
        assert "artifacts" not in sa.inspect(conn).get_table_names()
    engine.dispose()


def test_migrates_old_store(store_url, tmp_path):
    _make_v1(store_url)
    with open_store(store_url) as store:
        assert store.schema_version() == SCHEMA_VERSION == 8
        assert store.baseline_history("main") == []  # v4: the saves table exists, empty
        assert store.monitor_samples(1) == []  # v7: the monitor's table exists, empty
        old = store.campaign(1)
        assert old.study == "run" and old.config == {"x": 1} and old.name == "" and old.parent_id is None
        assert store.measurements(1)[0].result.wall_ns == 99
        assert store.measurements(1)[0].result.suspect is False  # v3 columns default on old rows
        child = store.start_campaign("cores", {}, parent_id=1)
        assert store.campaign(child).parent_id == 1
        f = tmp_path / "a"
        f.write_text("x")
        store.add_artifact(child, "log", str(f))
        assert len(store.artifacts(child)) == 1
    with open_store(store_url) as store:  # reopening applies nothing twice
        assert store.schema_version() == SCHEMA_VERSION


def test_newer_schema_refused(store_url):
    with open_store(store_url) as store:
        import sqlalchemy as sa

        with store.engine.begin() as conn:
            conn.execute(sa.text("INSERT INTO schema_version (version, applied) VALUES (99, :t)"),
                         {"t": "2030-01-01 00:00:00"})
    with pytest.raises(PerflabError, match="schema version 99.*upgrade perflab"):
        open_store(store_url)


def test_importing_store_does_not_import_sqlalchemy():
    code = "import sys, perflab.store; print('sqlalchemy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
