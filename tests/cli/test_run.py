"""`perflab run` end to end through its command line: two commands and their metrics, bad input,
failures kept, a parameter scan with --prepare and --precision."""

from __future__ import annotations

import json
import shlex

import pytest

from perflab.store import open_store
from tests.helpers import perflab


def test_cli_compare_two_commands_and_metrics(tmp_path):
    out = tmp_path / "c.json"
    p = perflab("run", "--db", str(tmp_path / "r.db"), "--runs", "5", "--export-json", str(out),
                "--metric", r"(?P<n>\d+) done", "sh -c 'echo 12 done'", "sh -c 'sleep 0.05; echo 3 done'")
    assert p.returncode == 0, p.stderr
    data = json.loads(out.read_text())["results"]
    assert [r["metrics"]["n"] for r in data] == [12.0, 3.0]
    assert data[1]["relative"]["ratio"] > 1.0 and data[0]["relative"]["ratio"] == 1.0
    assert "ranked by wall time (lower is better); reference:" in p.stdout


@pytest.mark.parametrize("args,msg", [
    (["--", "no-such-cmd-xyz"], "command 'no-such-cmd-xyz' not found: check the name or PATH"),
    (["--metric", "(?P<x>[0-9", "--", "true"], "does not compile"),
    (["--cpus", "4095", "--", "true"], "offline"),
    (["--timeout", "0.2", "--", "sleep", "3"], "timed out after 0.2 s"),
    (["--", "sh", "-c", "echo dying >&2; kill -SEGV $$"], "signal 11 (SIGSEGV) (stderr: dying)"),
    (["--", "sh", "-c", "echo nope >&2; exit 3"], "exited with status 3 (stderr: nope)"),
])
def test_cli_bad_input_exit_2(tmp_path, args, msg):
    db = tmp_path / "r.db"
    p = perflab("run", "--db", str(db), "--runs", "3", *args)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert lines[-1].startswith("perflab: error: ") and msg in lines[-1]
    assert "Traceback" not in p.stderr


def test_cli_failure_keeps_measurements(tmp_path):
    db = tmp_path / "r.db"
    flag = tmp_path / "n"
    q = shlex.quote(str(flag))  # the shell reads it: a TMPDIR may hold a space
    script = f"n=$(cat {q} 2>/dev/null || echo 0); echo $((n+1)) > {q}; [ $n -lt 2 ]"
    p = perflab("run", "--db", str(db), "--runs", "5", "--shell", "--", script)
    assert p.returncode == 2 and "exited with status 1" in p.stderr
    s = open_store(str(db))
    camp = s.campaigns(study="run")[-1]
    assert camp.status == "failed" and len(s.measurements(camp.id)) == 3
    s.close()
    p = perflab("run", "--db", str(db), "--runs", "3", "--ignore-failure", "--shell", "--", script)
    assert p.returncode == 0, p.stderr


def test_cli_parameter_scan_prepare_precision(tmp_path):
    out = tmp_path / "p.json"
    count = tmp_path / "count"
    p = perflab("run", "--db", str(tmp_path / "r.db"), "--runs", "3", "--warmup", "1",
                "-P", "n", "1", "2", "-D", "0.5", "--prepare", f"echo x >> {shlex.quote(str(count))}",
                "--export-json", str(out), "--", "sleep", "{n}e-3")
    assert p.returncode == 0, p.stderr
    res = json.loads(out.read_text())["results"]
    assert [r["parameters"] for r in res] == [{"n": "1"}, {"n": "1.5"}, {"n": "2"}]
    assert [r["command"] for r in res] == ["sleep 1e-3", "sleep 1.5e-3", "sleep 2e-3"]
    # prepare ran before every warmup and timed run: 3 benchmarks x (1 + 3)
    assert len(count.read_text().splitlines()) == 12
    p = perflab("run", "--db", str(tmp_path / "r.db"), "--precision", "50%", "--min-runs", "3",
                "--max-runs", "8", "--export-json", str(out), "--", "true")
    assert p.returncode == 0, p.stderr
    assert 3 <= len(json.loads(out.read_text())["results"][0]["times"]) <= 8
