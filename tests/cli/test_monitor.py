"""The machine monitor through the command line: instances monitored with idle phases, results
exporting them, bad input in one line."""

from __future__ import annotations

import os
import subprocess
import sys


def _perflab(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-m", "perflab", *args], capture_output=True, text=True,
                          timeout=300, env=env)
    proc.output = proc.stdout + proc.stderr  # type: ignore[attr-defined]  # one text for the assertions
    return proc


def test_instances_monitors_with_idle_phases_and_results_exports_them(tmp_path):
    db = str(tmp_path / "m.db")
    # 2 s of idle at 4 samples a second: idle samples on either side however loaded the machine
    res = _perflab("instances", "--n", "1", "--reps", "1", "--policy", "none", "--idle", "2s",
                   "--monitor-interval", "250ms", "--db", db, "--json", str(tmp_path / "i.json"),
                   "--", "sh", "-c", "echo events 4; sleep 0.3")
    assert res.returncode == 0, res.output
    import json

    summary = json.loads((tmp_path / "i.json").read_text())["result"]["monitor"]
    assert [p["phase"] for p in summary["phases"]] == ["idle-before", "study", "idle-after"]
    assert summary["interval_s"] == 0.25 and summary["idle_s"] == 2.0
    assert "monitor: every 0.25 s" in res.output and "machine beside the study" in res.output
    out = tmp_path / "m.csv"
    res = _perflab("results", "1", "--db", db, "--monitor-csv", str(out))
    assert res.returncode == 0, res.output
    lines = out.read_text().splitlines()
    assert lines[0].startswith("utc,t_s,phase,busy,steal")
    phases = [line.split(",")[2] for line in lines[1:]]
    assert phases[0] == "idle-before" and phases[-1] == "idle-after" and "study" in phases
    res = _perflab("report", "1", "--db", db, "-o", str(tmp_path / "r.html"))
    assert res.returncode == 0, res.output
    html = (tmp_path / "r.html").read_text()
    assert "Machine beside campaign 1 (instances)" in html and "The machine over the study" in html
    assert "What did the machine do beside the study?" in html  # its row in the summary table
    from tests.real.test_report_browser import CHROMIUM, check_rendered

    if CHROMIUM is not None:
        check_rendered(tmp_path, str(tmp_path / "r.html"), ["monitor-1"])


def test_bad_monitor_input_is_one_line_and_exit_2(tmp_path):
    db = str(tmp_path / "m.db")
    res = _perflab("results", "--db", db, "--monitor-csv", str(tmp_path / "x.csv"))
    assert res.returncode == 2 and "give its ID" in res.output
    res = _perflab("instances", "--no-monitor", "--idle", "5s", "--db", db, "--", "true")
    assert res.returncode == 2 and "--idle is the monitor's idle phases: add --monitor" in res.output
    res = _perflab("instances", "--monitor-interval", "0", "--db", db, "--", "true")
    assert res.returncode == 2 and "out of range" in res.output
