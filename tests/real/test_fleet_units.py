"""Fleet pieces on real processes: the batch script run by bash (its quoting, slot and bundle), and
a fleet's collection into a real PostgreSQL store, run twice."""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from perflab.fleet.collect import collect
from perflab.fleet.script import TaskSpec, write_script
from perflab.store import open_store
from tests.studies.test_fleet_units import _result, _task


@pytest.mark.postgres
def test_collect_is_idempotent(tmp_path, postgres_url):
    shards = tmp_path / "shards"
    shards.mkdir()
    for slot in range(3):
        with open_store(str(shards / f"farm.{slot}.job1.db")) as s:
            _task(s, "farm", slot, f"n{slot}", "EPYC", [100.0 + slot] * 5,
                  status="running" if slot == 2 else "done")
            _task(s, "other", slot, f"n{slot}", "EPYC", [1.0] * 2)  # another fleet: not collected
    with open_store(postgres_url) as target:
        first = collect("farm", shards, target)
        assert (first.shards, first.copied, first.measurements) == (3, 3, 15)
        again = collect("farm", shards, target)
        assert (again.copied, again.updated, again.unchanged) == (0, 0, 3)
        with open_store(str(shards / "farm.2.job1.db")) as s:  # the running one finishes
            cid = s.campaigns()[0].id
            s.add_measurement(cid, _result(102.0), {}, rep=5, label="w")
            s.finish_campaign(cid, "done")
        third = collect("farm", shards, target)
        assert (third.copied, third.updated, third.unchanged) == (0, 1, 2)
        camps = [c for c in target.campaigns() if c.labels.get("fleet") == "farm"]
        assert len(camps) == 3 and {c.status for c in camps} == {"done"}
        assert sorted(c.n_measurements for c in camps) == [5, 5, 6]
        assert len({c.host_id for c in camps}) == 3


NASTY = ["a b", "it's", 'say "hi"', "x; touch PWNED", "$(touch PWNED2)", "`touch PWNED3`", "*", "", "\\n", "{n}"]


def _fake_python(tmp_path: Path) -> Path:
    """An 'interpreter' that prints the argv and fleet environment it was given, as JSON."""
    p = tmp_path / "fake python"
    p.write_text("#!/usr/bin/env python3\nimport json, os, sys\n"
                 "print(json.dumps({'argv': sys.argv[1:], 'env': {k: v for k, v in os.environ.items() "
                 "if k.startswith('PERFLAB_')}}))\n")
    p.chmod(0o755)
    return p


def _run_script(text: str, tmp_path: Path, **env) -> dict:
    script = tmp_path / "task.sbatch"
    script.write_text(text)
    base = {"PATH": os.environ["PATH"], "TMPDIR": str(tmp_path), "SLURM_ARRAY_TASK_ID": "2", "SLURM_JOB_ID": "77"}
    r = subprocess.run(["bash", str(script)], env={**base, **env}, capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_script_passes_every_argument_as_given(tmp_path):
    db_dir = tmp_path / "shard dir; rm -rf x"
    spec = TaskSpec(fleet="f1", study="run", study_args=("--runs", "3", "--", "printf", *NASTY),
                    db=str(db_dir), python=str(_fake_python(tmp_path)), workdir=str(tmp_path / "it's here"),
                    shards=True, host_label="node x")
    out = _run_script(write_script(spec), tmp_path)
    db = str(db_dir / "f1.2.job77.db")
    assert out["argv"] == ["-m", "perflab", "run", "--db", db, "--runs", "3", "--", "printf", *NASTY]
    assert out["env"]["PERFLAB_FLEET"] == "f1" and out["env"]["PERFLAB_FLEET_SLOT"] == "2"
    assert out["env"]["PERFLAB_HOST_LABEL"] == "node x-2"
    assert out["env"]["PERFLAB_CACHE"].startswith(str(tmp_path))  # node-local by default
    assert not list(tmp_path.glob("PWNED*"))
    assert db_dir.is_dir()


def test_script_takes_its_slot_from_its_argument(tmp_path):
    spec = TaskSpec(fleet="f4", study="run", study_args=("--", "true"), db="x.db",
                    python=str(_fake_python(tmp_path)), workdir=str(tmp_path))
    script = tmp_path / "slot.sbatch"
    script.write_text(write_script(spec))
    r = subprocess.run(["bash", str(script), "3"], capture_output=True, text=True, cwd=tmp_path,
                       env={"PATH": os.environ["PATH"], "TMPDIR": str(tmp_path), "SLURM_JOB_ID": "9"})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1])["env"]["PERFLAB_FLEET_SLOT"] == "3"


def test_script_nodelist_slot_and_url(tmp_path):
    spec = TaskSpec(fleet="f2", study="cores", study_args=("-w", "minihlt"), db="postgresql://u@h:5/db",
                    python=str(_fake_python(tmp_path)), workdir="/nonexistent")
    out = _run_script(write_script(spec), tmp_path, PERFLAB_FLEET_SLOT="node17")
    assert out["argv"][3:5] == ["--db", "postgresql://u@h:5/db"]
    assert out["env"]["PERFLAB_FLEET_SLOT"] == "node17" and "PERFLAB_HOST_LABEL" not in out["env"]


def test_script_unpacks_the_bundle_node_locally(tmp_path):
    content = tmp_path / "content"
    content.mkdir()
    (content / "run.sh").write_text("echo hi\n")
    bundle = tmp_path / "b.tar.gz"
    with tarfile.open(bundle, "w:gz") as tf:
        tf.add(content / "run.sh", arcname="run.sh")
    spec = TaskSpec(fleet="f3", study="run", study_args=("--", "sh", "{bundle}/run.sh", "a {bundle} b"),
                    db="x.db", python=str(_fake_python(tmp_path)), workdir=str(tmp_path), bundle=str(bundle))
    text = write_script(spec)
    out = _run_script(text, tmp_path)
    where = str(tmp_path / "perflab-bundle-77")
    assert out["argv"][-3:] == ["sh", f"{where}/run.sh", f"a {where} b"]
    assert not Path(where).exists()  # removed when the task ends
