"""A fleet task whose PostgreSQL store goes away mid-campaign keeps the rest in its own shard, and
`fleet collect` merges it into the campaign it continues.

No Slurm cluster: the task is the fleet's real batch script run by bash with the environment
Slurm gives an array task; squeue/sacct/scontrol are stand-ins that say the job failed, as Slurm
would of a task that exits 3. The store is the session's PostgreSQL server behind a TCP relay
that the test closes while the task waits at a held run: the server is unreachable to the task
alone, and its retries (PERFLAB_DB_RETRY_S) run out at once.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from perflab.cli import cli
from perflab.fleet import state
from perflab.fleet.script import TaskSpec, write_script
from perflab.store import open_store

from tests.conftest import Hold

ROOT = Path(__file__).resolve().parents[2]


class Relay:
    """127.0.0.1:PORT -> the server; close() drops every connection and refuses new ones."""

    def __init__(self, port: int) -> None:
        self.upstream, self.socks = port, []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            up = socket.create_connection(("127.0.0.1", self.upstream))
            self.socks += [client, up]
            for a, b in ((client, up), (up, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass

    def close(self) -> None:
        self.server.shutdown(socket.SHUT_RDWR)  # wakes the accept (close alone leaves it listening)
        self.server.close()
        for s in self.socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


def _fake_slurm(bin_dir: Path) -> None:
    """squeue: nothing queued; sacct: the task failed with exit 3 (what Slurm says of it)."""
    bin_dir.mkdir()
    for name, text in (("squeue", ""), ("scontrol", ""), ("sacct", "echo '5_0|FAILED|3:0'")):
        (bin_dir / name).write_text(f"#!/bin/sh\n{text}\n")
        (bin_dir / name).chmod(0o755)


def _cli(args: list[str]) -> str:
    r = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return r.output


@pytest.mark.postgres
def test_a_task_that_loses_the_store_keeps_its_runs_in_a_shard_and_collect_merges_them(
        pg_server, postgres_url, tmp_path, monkeypatch):
    relay = Relay(pg_server.port)
    task_url = postgres_url.replace(f":{pg_server.port}/", f":{relay.port}/")
    log_dir = tmp_path / "perflab-fleet" / "lost"
    log_dir.mkdir(parents=True)
    hold = Hold(tmp_path, 3)  # a warm-up and 2 runs reach the server; the next waits
    spec = TaskSpec(fleet="lost", study="run", db=task_url, python=sys.executable, workdir=str(tmp_path),
                    study_args=("--runs", "6", "--command-name", "t", "--", *hold.wrap(["true"])),
                    host_label="node", failover_dir=str(state.failover_dir(log_dir)))
    script = log_dir / "lost.sbatch"
    script.write_text(write_script(spec))
    with open_store(postgres_url) as store:
        fleet = state.create(store, "lost", {
            "name": "lost", "study": "run", "study_args": list(spec.study_args), "db": task_url,
            "shards": False, "slots": ["0"], "script": str(script), "log_dir": str(log_dir),
            "job_name": "perflab-fleet-lost", "submitter": "slurm", "host_label": "node"})
        state.record_jobs(store, fleet, {"0": "5_0"})
    _fake_slurm(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setenv("COLUMNS", "400")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PERFLAB_CACHE": str(tmp_path / "cache"),
           "SLURM_ARRAY_JOB_ID": "5", "SLURM_ARRAY_TASK_ID": "0", "SLURM_JOB_ID": "6",
           "PERFLAB_DB_RETRY_S": "0.3"}
    env.pop("PERFLAB_DB", None)
    log = log_dir / "perflab-fleet-lost-5_0.out"
    with open(log, "w") as out:
        task = subprocess.Popen(["bash", str(script)], env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            hold.wait_held(task, timeout=60)
            relay.close()
            hold.release_file.touch()  # the held run ends and its write finds no server
            assert task.wait(timeout=60) == 3
        finally:
            if task.poll() is None:
                task.kill()
    shard = state.failover_dir(log_dir) / "lost.0.job5_0.db"
    errors = [ln for ln in log.read_text().splitlines() if ln.startswith("perflab: error:")]
    assert len(errors) == 1 and f"stored in shard {shard}" in errors[0], log.read_text()
    assert "Traceback" not in log.read_text() and shard.exists()

    with open_store(postgres_url) as store:
        (camp,) = [c for c in store.campaigns(study="run") if c.labels.get("fleet") == "lost"]
        assert camp.status == "running" and 0 < camp.n_measurements < 6
        cid, on_server = camp.id, store.measurements(camp.id)
    with open_store(str(shard)) as kept:
        (copy,) = kept.campaigns(study="run")
        assert copy.id == cid and copy.status == "done" and copy.n_measurements == 6 - len(on_server)
        first = kept.measurements(cid)[0]

    st = {s["slot"]: s for s in json.loads(_cli(["fleet", "status", "lost", "--db", postgres_url, "--json", "-"]))}
    assert st["0"]["state"] == "done" and st["0"]["host"] == "node-0" and st["0"]["campaign_id"] is None
    assert f"stored in shard {shard}" in st["0"]["reason"]
    rep = json.loads(_cli(["fleet", "report", "lost", "--db", postgres_url, "--json", "-"]))
    assert [m["slot"] for m in rep["missing"]] == ["0"] and rep["hosts"] == []

    # The write whose commit went unanswered: the server has it too, and collect must not add it twice.
    with open_store(postgres_url) as store:
        store.add_measurement(cid, first.result, first.params, rep=first.rep, label=first.label)
    out = _cli(["fleet", "collect", "lost", "--db", postgres_url])
    assert " ".join(out.split()).startswith(
        f"fleet lost: 1 shard(s) read; 0 campaign(s) copied, 1 updated, 0 already there; "
        f"{6 - len(on_server) - 1} measurement(s) written"), out
    assert not shard.exists() and shard.with_name(shard.name + ".merged").exists()
    assert "no shard waiting" in _cli(["fleet", "collect", "lost", "--db", postgres_url])
    # Collected again from a copy (the rename lost, say): nothing is stored twice.
    shutil.copy(shard.with_name(shard.name + ".merged"), tmp_path / "again.db")
    out = _cli(["fleet", "collect", "lost", "--db", postgres_url, "--from", str(tmp_path)])
    assert "0 measurement(s) written" in out and "1 already there" in out, out

    with open_store(postgres_url) as store:
        camp = store.campaign(cid)
        ms = store.measurements(cid)
    assert camp.status == "done" and camp.summary and len(ms) == 6
    assert sorted((m.label, m.rep, json.dumps(m.params, sort_keys=True)) for m in ms) == \
        sorted({(m.label, m.rep, json.dumps(m.params, sort_keys=True)) for m in ms})
    st = json.loads(_cli(["fleet", "status", "lost", "--db", postgres_url, "--json", "-"]))
    assert [(s["state"], s["campaign_id"], s["host"]) for s in st] == [("done", cid, "node-0")]
    rep = json.loads(_cli(["fleet", "report", "lost", "--db", postgres_url, "--json", "-"]))
    assert rep["missing"] == [] and [(h["host"], h["status"], h["headline"]["n"]) for h in rep["hosts"]] == \
        [("node-0", "done", 6)]


@pytest.mark.postgres
def test_a_campaign_begun_after_the_loss_is_copied_and_the_shard_belongs_to_its_store(
        pg_server, postgres_url, tmp_path, monkeypatch):
    from perflab.errors import PerflabError
    from perflab.fleet.collect import collect
    from perflab.model import RunResult
    from perflab.store.failover import StoredInShard

    def result(i: int) -> RunResult:
        return RunResult(wall_ns=1000 + i, user_s=0, sys_s=0, maxrss_kb=1, minflt=0, majflt=0, nvcsw=0,
                         nivcsw=0, exit_code=0, start_ns=i)

    relay = Relay(pg_server.port)
    shard = tmp_path / "shards" / "f.0.job1.db"
    before, after = tmp_path / "before.txt", tmp_path / "after.data"
    before.write_text("written while the server answered\n")
    after.write_bytes(b"recorded after the loss")
    for key, value in (("PERFLAB_FAILOVER_SHARD", str(shard)), ("PERFLAB_DB_RETRY_S", "0.2"),
                       ("PERFLAB_FLEET", "f"), ("PERFLAB_FLEET_SLOT", "0")):
        monkeypatch.setenv(key, value)
    with pytest.raises(StoredInShard) as err:
        with open_store(postgres_url.replace(f":{pg_server.port}/", f":{relay.port}/")) as store:
            with store.open_campaign("run", {"a": 1}) as camp:
                store.add_measurement(camp.id, result(0), {"i": 0})
                store.add_artifact(camp.id, "log", str(before))
                relay.close()
                store.add_measurement(camp.id, result(1), {"i": 1})
                assert store.shard == shard
                store.add_artifact(camp.id, "perf.data", str(after), {"events": "cycles"})  # after the loss
            with store.open_campaign("run", {"b": 2}) as later:  # begun in the shard alone
                store.add_measurement(later.id, result(2), {"i": 2})
                store.add_artifact(later.id, "report", str(after))
    assert err.value.exit_code == 3 and str(shard) in str(err.value)
    monkeypatch.delenv("PERFLAB_FAILOVER_SHARD")

    with open_store(pg_server.create_db("other_store")) as wrong:  # not the store the shard continues
        res = collect("f", shard.parent, wrong)
        assert res.merged == [] and len(res.skipped) == 1 and "does not hold" in res.skipped[0]
        assert shard.exists() and wrong.campaigns() == []  # nothing of it copied there
    with open_store(postgres_url) as store:
        res = collect("f", shard.parent, store)
        assert (res.copied, res.updated, res.measurements, res.merged) == (1, 1, 2, [shard.name])
        camps = {c.id: c for c in store.campaigns(study="run")}
        assert camps[camp.id].status == "done" and camps[camp.id].n_measurements == 2
        (new,) = [c for c in camps.values() if c.id != camp.id]
        assert new.config == {"b": 2} and new.status == "done" and new.n_measurements == 1
        # The files recorded after the loss are merged with the runs, each once.
        assert [(a.kind, Path(a.path).name, a.size) for a in store.artifacts(camp.id)] == \
            [("log", "before.txt", before.stat().st_size), ("perf.data", "after.data", 23)]
        assert store.artifacts(camp.id)[1].meta == {"events": "cycles"}
        assert [(a.kind, a.path) for a in store.artifacts(new.id)] == [("report", str(after))]
    shutil.copy(shard.with_name(shard.name + ".merged"), tmp_path / "shards" / "again.db")
    with open_store(postgres_url) as store:  # the shard collected twice: no file recorded twice
        collect("f", shard.parent, store)
        assert len(store.artifacts(camp.id)) == 2 and len(store.artifacts(new.id)) == 1
    (tmp_path / "shards" / "again.db.merged").unlink()
    with open_store(postgres_url) as store, pytest.raises(PerflabError, match="no \\*.db shards"):
        collect("f", shard.parent, store)
