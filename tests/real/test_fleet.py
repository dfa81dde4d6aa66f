"""Fleet mode against a real single-node Slurm (scripts/slurm-local) and a real PostgreSQL.

Job array tasks on the one node stand in for nodes: each records a distinct host label
(--host-label). The unit tests cover the batch script's quoting and the slow-node statistics.
"""

from __future__ import annotations

import json
import os
import shlex
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from perflab.fleet.submitter import Slurm

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "slurm-local"
SECRET = "Pw-s3cr3t-9x"


# Where Slurm's daemons are on Debian: /usr/sbin, outside a user's PATH (scripts/slurm-local
# adds it the same way).
SLURM_PATH = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"


def slurm_missing() -> str | None:
    """Why no local Slurm cluster can start here, or None."""
    missing = [t for t in ("munged", "slurmctld", "slurmd", "sbatch") if shutil.which(t, path=SLURM_PATH) is None]
    if missing:
        return f"Slurm is not installed ({', '.join(missing)} missing): run scripts/install-system-packages.sh"
    return None


def cluster_dir(tmp_path_factory, name: str):
    """A directory for a local cluster, named after this session's pid (NAME-PID-N): slurm.conf
    cannot hold a path with a space, so where the temporary directory has one (TMPDIR="/tmp/my
    tmp") the cluster lives in /tmp. The clusters of killed sessions are stopped first."""
    stop_orphaned_clusters()
    d = tmp_path_factory.mktemp(f"{name}-{os.getpid()}-")
    if any(c.isspace() for c in str(d)):
        d = Path(tempfile.mkdtemp(prefix=f"perflab-{name}-{os.getpid()}-", dir="/tmp"))
    return d


def stop_orphaned_clusters() -> None:
    """Stop the local clusters that killed test sessions left running: a session killed with
    kill -9 runs no teardown, and its munged, slurmctld and slurmd would run on, unowned."""
    me = os.geteuid()
    for proc in Path("/proc").iterdir():
        try:
            if not proc.name.isdigit() or proc.stat().st_uid != me:
                continue
            argv = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:  # gone meanwhile
            continue
        if not argv[0].endswith("slurmctld") or "-f" not in argv[:-1]:
            continue
        d = Path(argv[argv.index("-f") + 1]).parent
        m = re.fullmatch(r"(?:perflab-)?(?:slurm|farm)-(\d+)-\w*", d.name)
        if m and not Path(f"/proc/{m.group(1)}").exists():
            stop_cluster(d)


def stop_cluster(d: Path) -> None:
    subprocess.run([str(SCRIPT), "stop", str(d)], capture_output=True, timeout=60)
    if d.name.startswith("perflab-"):  # one of cluster_dir's own in /tmp
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def slurm(tmp_path_factory):
    """A private single-node Slurm cluster; yields its SLURM_CONF."""
    if why := slurm_missing():
        pytest.skip(why)
    d = cluster_dir(tmp_path_factory, "slurm")
    out = subprocess.run([str(SCRIPT), "start", str(d)], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        stop_cluster(d)
    assert out.returncode == 0, out.stdout + out.stderr
    conf = out.stdout.strip().splitlines()[-1].split("=", 1)[1]
    yield conf
    stop_cluster(d)


def _env(slurm_conf: str | None, tmp_path: Path, **extra) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PERFLAB_CACHE": str(tmp_path / "cache")}
    env.pop("PERFLAB_DB", None)
    if slurm_conf:
        env["SLURM_CONF"] = slurm_conf
    env.update(extra)
    return env


def perflab(args: list[str], env: dict, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "perflab", *args], env=env, cwd=cwd, capture_output=True,
                       text=True, timeout=120)
    if check:
        assert r.returncode == 0, f"perflab {' '.join(args)}: {r.stdout}{r.stderr}"
    return r


def _queue(env: dict) -> str:
    return subprocess.run(["squeue", "-h", "-o", "%i %j %T"], env=env, capture_output=True, text=True).stdout


def _wait_idle(env: dict, limit: float = 150.0) -> None:
    deadline = time.monotonic() + limit
    while _queue(env).strip():
        assert time.monotonic() < deadline, f"jobs still queued: {_queue(env)}"
        time.sleep(0.5)


def _status(name: str, db: str, env: dict, cwd: Path) -> dict[str, dict]:
    out = perflab(["fleet", "status", name, "--db", db, "--json", "-"], env, cwd).stdout
    return {s["slot"]: s for s in json.loads(out)}


def _report(name: str, db: str, env: dict, cwd: Path) -> dict:
    r = perflab(["fleet", "report", name, "--db", db, "--json", "-"], env, cwd)
    return json.loads(r.stdout)


@pytest.mark.postgres
def test_fleet_end_to_end(slurm, postgres_url, tmp_path):
    """run and instances on 3 array tasks; a cancelled task fails and resubmit --missing finishes it."""
    from perflab.store import open_store

    db = postgres_url.replace("postgres@", f"postgres:{SECRET}@", 1)  # trust auth: never checked
    env = _env(slurm, tmp_path)
    outputs = []
    from tests.conftest import Hold

    # Slot 1's second run waits until the test has cancelled it: it cannot finish first on any machine.
    hold = Hold(tmp_path, 1)
    held = ["sh", "-c", f'[ "$PERFLAB_FLEET_SLOT" = 1 ] || exec "$@"; {hold.script()}', "sh", "sleep", "0.02"]
    outputs.append(perflab(["fleet", "submit", "runs", "--nodes", "3", "--host-label", "node", "--db", db,
                            "--", "run", "--runs", "10", "--command-name", "nap", "--", *held], env, tmp_path))
    outputs.append(perflab(["fleet", "submit", "scan", "--nodes", "3", "--host-label", "inst", "--db", db,
                            "--", "instances", "--n", "1,2", "--reps", "4", "--", "sleep", "0.05"], env, tmp_path))
    # A node that cannot reach the database: its job environment demands SSL the server lacks.
    outputs.append(perflab(["fleet", "submit", "nodb", "--nodes", "1", "--db", db, "--", "run", "--runs", "2",
                            "--", "true"], {**env, "SBATCH_EXPORT": "ALL,PGSSLMODE=require"}, tmp_path))
    assert "submitted 3 task(s)" in outputs[0].stdout

    # Cancel slot 1 of `runs` mid-run: once its campaign has stored a measurement.
    store = open_store(postgres_url)
    deadline = time.monotonic() + 60
    while True:
        camps = [c for c in store.campaigns(study="run") if c.labels.get("fleet") == "runs"
                 and c.labels.get("fleet_slot") == "1" and c.n_measurements > 0]
        if camps:
            break
        assert time.monotonic() < deadline, _queue(env)
        time.sleep(0.2)
    job = camps[0].labels["slurm_array_job_id"] + "_1"
    assert camps[0].labels["slurm_array_task_id"] == "1" and camps[0].labels["host_label"] == "node-1"
    hold.wait_held(None)
    subprocess.run(["scancel", job], env=env, check=True)
    hold.release()
    _wait_idle(env)

    st = _status("runs", db, env, tmp_path)
    assert [st[s]["state"] for s in ("0", "1", "2")] == ["done", "failed", "done"], st
    assert "CANCELLED" in st["1"]["reason"]
    outputs.append(perflab(["fleet", "resubmit", "runs", "--missing", "--db", db], env, tmp_path))
    assert "resubmitted slot(s) 1" in outputs[-1].stdout
    _wait_idle(env)
    st = _status("runs", db, env, tmp_path)
    assert all(s["state"] == "done" for s in st.values()), st

    rep = _report("runs", db, env, tmp_path)
    assert set(rep) == {"fleet", "hosts", "platforms", "slow_hosts", "missing", "cannot_tell"}
    assert sorted(h["host"] for h in rep["hosts"]) == ["node-0", "node-1", "node-2"]
    assert all(h["status"] == "done" and h["headline"]["n"] == 10 for h in rep["hosts"])
    assert len(rep["platforms"]) == 1 and rep["platforms"][0]["n_hosts"] == 3
    assert rep["missing"] == []

    scan = _report("scan", db, env, tmp_path)
    assert sorted(h["host"] for h in scan["hosts"]) == ["inst-0", "inst-1", "inst-2"]
    assert all(h["headline"]["optimum_n"] in (1, 2) and h["headline"]["throughput"] > 0 for h in scan["hosts"])

    nodb = _report("nodb", db, env, tmp_path)
    (host,) = nodb["hosts"]
    assert host["status"] == "failed"
    assert "perflab: error: cannot open results store" in host["error"], host
    log = Path(host["log"]).read_text()
    assert sum("perflab: error:" in ln for ln in log.splitlines()) == 1 and "Traceback" not in log

    # The password: in no output, script, log, report or stored campaign.
    html = tmp_path / "r.html"
    outputs.append(perflab(["fleet", "report", "runs", "--db", db, "--html", str(html)], env, tmp_path))
    texts = [o.stdout + o.stderr for o in outputs] + [html.read_text(), json.dumps(rep), json.dumps(nodb)]
    texts += [p.read_text() for p in (tmp_path / "perflab-fleet").rglob("*") if p.is_file()]
    texts += [json.dumps([c.config, c.labels, c.summary], default=str) for c in store.campaigns()]
    assert not [t for t in texts if SECRET in t]
    store.close()


def _fails(args: list[str], env: dict, cwd: Path, expect: str) -> None:
    r = perflab(args, env, cwd, check=False)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("perflab: error:") and expect in lines[0], r.stderr
    assert "Traceback" not in r.stdout + r.stderr


def _submitted(env: dict, name: str) -> bool:
    out = subprocess.run(["scontrol", "-o", "show", "job"], env=env, capture_output=True, text=True).stdout
    return f"JobName=perflab-fleet-{name} " in out


def test_submit_bad_input(slurm, tmp_path):
    """One line, exit 2, nothing submitted, for each way a submission can be wrong."""
    from perflab.fleet import state
    from perflab.store import open_store

    env = _env(slurm, tmp_path)
    db = str(tmp_path / "f.db")
    with open_store(db) as store:
        state.create(store, "taken", {"study": "run", "slots": []})
    run = ["--", "run", "--runs", "2", "--", "true"]
    cases = [
        (["bad1", "--nodes", "2", "--db", db, *run], {**env, "PATH": str(tmp_path / "empty")}, "sbatch not found"),
        (["bad2", "--nodes", "2", "--partition", "nope", "--db", db, *run], env, "unknown Slurm partition 'nope'"),
        (["bad3", "--nodes", "2", "--db", f"postgresql://u:{SECRET}@127.0.0.1:1/x", *run], env,
         "cannot open results store"),
        (["taken", "--nodes", "2", "--db", db, *run], env, "exists already"),
        (["bad5", "--nodes", "2", "--db", db, "--", "run", "--runs", "0", "--", "true"], env, "rejects its options"),
        (["bad6", "--nodes", "2", "--db", db, "--", "frobnicate"], env, "not a study a fleet can run"),
        (["bad7", "--db", db, *run], env, "--nodes N or --nodelist"),
        (["bad8", "--nodes", "2", "--db", db, "--", "run", "--db", "x.db", "--", "true"], env, "not to the study"),
    ]
    (tmp_path / "empty").mkdir()
    for args, case_env, expect in cases:
        _fails(["fleet", "submit", *args], case_env, tmp_path, expect)
        assert not _submitted(env, args[0]), args
    r = perflab(["fleet", "submit", "bad3", "--nodes", "1", "--db", f"postgresql://u:{SECRET}@127.0.0.1:1/x", *run],
                env, tmp_path, check=False)
    assert SECRET not in r.stdout + r.stderr
    with open_store(db) as store:
        assert [c.name for c in store.campaigns(study="fleet")] == ["taken"]
    _fails(["fleet", "status", "nosuch", "--db", db], env, tmp_path, "no fleet 'nosuch'")
    _fails(["fleet", "report", "nosuch", "--db", db], env, tmp_path, "no fleet 'nosuch'")


def test_slurm_status_of_unknown_job_is_unknown(slurm, tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_CONF", slurm)
    st = Slurm().status({"0": "999999_0"})
    assert st["0"].state == "unknown"


def test_submit_without_db_uses_the_default_store(slurm, tmp_path):
    """No --db: tasks write to ./perflab.db of the submitting directory; --nodelist: slot = node."""
    env = _env(slurm, tmp_path)
    node = subprocess.run(["hostname", "-s"], capture_output=True, text=True, check=True).stdout.strip()
    logs = tmp_path / "logs 100% it's"  # spaces, a quote and a %: the paths go as given
    perflab(["fleet", "submit", "plain", "--nodelist", node, "--log-dir", str(logs), "--", "run", "--runs", "2",
             "--", "true"], env, tmp_path)
    script = (logs / "plain.sbatch").read_text()
    assert f"db={shlex.quote(str(tmp_path / 'perflab.db'))}\n" in script
    _wait_idle(env)
    st = _status("plain", str(tmp_path / "perflab.db"), env, tmp_path)
    assert st[node]["state"] == "done" and st[node]["host"] == node, st
    assert "_" not in st[node]["job"]  # one plain job per node, not an array task
    assert "perflab: results in" in Path(st[node]["log"]).read_text()


def test_nodes_n_where_fewer_nodes_are_up_says_so_and_measures_those(slurm, tmp_path):
    """--nodes 3 on a one-node cluster: one line says so, and the one node gets one task."""
    env = _env(slurm, tmp_path)
    db = str(tmp_path / "few.db")
    node = subprocess.run(["sinfo", "-h", "-N", "-o", "%N"], env=env, capture_output=True, text=True).stdout.split()[0]
    r = perflab(["fleet", "submit", "few", "--nodes", "3", "--db", db, "--", "run", "--runs", "2", "--", "true"],
                env, tmp_path)
    out = " ".join(r.stdout.split())
    assert f"fleet few: only 1 of the 3 nodes asked for are up in the default partition: one task on each of {node}" \
        in out and "submitted 1 task(s)" in out, out
    _wait_idle(env)
    st = _status("few", db, env, tmp_path)
    assert [(s["slot"], s["state"], s["host"]) for s in st.values()] == [("0", "done", node)], st


def test_cancel_stops_queued_and_running_tasks(slurm, tmp_path):
    env = _env(slurm, tmp_path)
    db = str(tmp_path / "c.db")
    # Two stand-in nodes on the one machine (an array), so that one task queues behind the other.
    perflab(["fleet", "submit", "long", "--nodes", "2", "--host-label", "n", "--db", db, "--", "run", "--runs", "3",
             "--", "sleep", "30"], env, tmp_path)
    out = perflab(["fleet", "cancel", "long", "--db", db], env, tmp_path).stdout
    assert "cancelled slot(s) 0, 1" in out, out
    _wait_idle(env, limit=30)
    st = _status("long", db, env, tmp_path)
    assert {s["state"] for s in st.values()} == {"failed"} and all("CANCELLED" in s["reason"] for s in st.values()), [s["reason"] for s in st.values()]
    assert "no queued or running task" in perflab(["fleet", "cancel", "long", "--db", db], env, tmp_path).stdout
