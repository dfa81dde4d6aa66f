"""perflab lab end to end: every study in --quick, the report, and --resume after a kill."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from tests.test_report_browser import CHROMIUM, check_rendered

PERFLAB = [sys.executable, "-m", "perflab"]


@pytest.fixture(scope="module")
def quick_lab(tmp_path_factory):
    """One real `perflab lab --quick` run, shared by the checks below (a few minutes)."""
    d = tmp_path_factory.mktemp("lab")
    p = subprocess.run([*PERFLAB, "lab", "--quick", "--out", str(d / "out"), "--db", str(d / "lab.db")],
                       capture_output=True, text=True, timeout=900, cwd=d)
    return d, p


def test_lab_quick_runs_every_study_and_writes_the_report(quick_lab):
    d, p = quick_lab
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    html = (d / "out" / "report.html").read_text()
    md = (d / "out" / "report.md").read_text()
    for study in ("run", "cores", "instances", "variants", "profile", "frontend", "micro"):
        assert re.search(rf'<section id="{study}-\d+"', html), f"no {study} section"
    assert '<section id="machine"' in html
    # real numbers, not placeholders: events/s of minihlt, per-CPU medians, a plot per study
    assert re.search(r"minihlt-quick: median \d\.\d+ s .*events/s", md)
    assert html.count("<svg") >= 5
    assert "x32" in html  # the -mx32 variant is reported as not runnable here (or measured)
    assert "no verdict recorded" not in md


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed")
def test_lab_report_renders_in_chromium(quick_lab, tmp_path):
    d, p = quick_lab
    assert p.returncode == 0
    html = (d / "out" / "report.html").read_text()
    ids = re.findall(r'<section id="([\w-]+)"', html)
    check_rendered(tmp_path, str(d / "out" / "report.html"), ids)


TOML = """
[workload.counter]
command = ["sh", "-c", "echo run >> {log}; i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; echo 'events: 10'"]
metrics = ["events: (?P<events>\\\\d+)"]
"""


def test_resume_after_kill_repeats_no_finished_measurement(tmp_path):
    log = tmp_path / "executions.log"
    (tmp_path / "perflab.toml").write_text(TOML.replace("{log}", str(log)))
    out, db = tmp_path / "out", tmp_path / "lab.db"
    args = [*PERFLAB, "lab", "--quick", "--studies", "run,cores", "--workload", "counter",
            "--config", str(tmp_path / "perflab.toml"), "--out", str(out), "--db", str(db)]
    proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    journal = out / "journal.jsonl"
    deadline = time.monotonic() + 240
    # Kill in the middle of the second study, once a few of its runs are journaled.
    while time.monotonic() < deadline and proc.poll() is None:
        n = len(journal.read_text().splitlines()) if journal.exists() else 0
        if n >= 14:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "lab finished before it could be killed: " + proc.stdout.read()[-2000:]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    finished_before = len(journal.read_text().splitlines())
    executed_before = len(log.read_text().splitlines())
    assert executed_before in (finished_before, finished_before + 1)  # at most one run in flight

    p = subprocess.run(args + ["--resume"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    finished_total = len(journal.read_text().splitlines())
    executed_total = len(log.read_text().splitlines())
    # Every finished run was executed exactly once; only a run killed in flight ran again.
    assert executed_total - executed_before == finished_total - finished_before
    assert executed_total <= finished_total + 1
    m = re.search(r"\((\d+) runs executed, (\d+) replayed from the journal\)", p.stdout)
    # The interrupted study was re-entered (its finished runs replayed, not restarted); a study
    # that had finished was skipped outright, so its runs are neither replayed nor executed.
    assert m and int(m.group(1)) == finished_total - finished_before, p.stdout[-2000:]
    assert 1 <= int(m.group(2)) <= finished_before
    # the resumed lab is done and its report has both studies
    html = (out / "report.html").read_text()
    assert re.search(r'<section id="run-\d+"', html) and re.search(r'<section id="cores-\d+"', html)
    from perflab.store import open_store

    store = open_store(str(db))
    labs = store.campaigns(study="lab")
    assert labs[-1].status == "done"


def test_resume_with_nothing_to_resume_is_a_one_line_error(tmp_path):
    p = subprocess.run([*PERFLAB, "lab", "--resume", "--db", str(tmp_path / "x.db")], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "nothing to resume" in p.stderr and "Traceback" not in p.stderr


def test_lab_unknown_study_is_a_one_line_error(tmp_path):
    p = subprocess.run([*PERFLAB, "lab", "--studies", "run,nosuch", "--db", str(tmp_path / "x.db")],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "unknown study 'nosuch'" in p.stderr and "Traceback" not in p.stderr
