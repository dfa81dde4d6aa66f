"""perflab lab end to end: every study in --quick, the report, and --resume after a kill."""

from __future__ import annotations

import json
import os
import shlex
import re
import signal
import subprocess
import sys

import pytest

from tests.real.test_report_browser import CHROMIUM, check_rendered

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
    assert re.search(r"minihlt-quick: median \d\.\d+ s .*events(/s|_per_s)", md)
    assert html.count("<svg") >= 5
    assert "x32" in html  # the -mx32 variant is reported as not runnable here (or measured)
    assert "no verdict recorded" not in md


def test_lab_quick_warns_of_nothing_internal_and_names_an_n(quick_lab):
    # The micro pack's shm regex warned twice of "none of 260 runs"; instances ran 1 round a
    # point where an optimum needs 4 and answered "not enough evidence" (tests/real/test_lab_degrade.py
    # checks the settings of every study; the answer itself depends on a quiet machine).
    d, p = quick_lab
    assert "warning: metric regex" not in p.stdout + p.stderr
    assert "not enough evidence" not in p.stdout
    assert re.search(r"^answer: N = \d+", p.stdout, re.MULTILINE), p.stdout[-3000:]


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed")
def test_lab_report_renders_in_chromium(quick_lab, tmp_path):
    d, p = quick_lab
    assert p.returncode == 0
    html = (d / "out" / "report.html").read_text()
    ids = re.findall(r'<section id="([\w-]+)"', html)
    # PERFLAB_UPDATE_SCREENSHOT=1 keeps the top of this real report for the README
    shot = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "report-top.png")
    check_rendered(tmp_path, str(d / "out" / "report.html"), ids,
                   screenshot=shot if os.environ.get("PERFLAB_UPDATE_SCREENSHOT") else None)


# Each execution logs its allowed CPUs: the run study's runs are unpinned (all CPUs), cores pins
# each run to one CPU, so the log tells the two studies' executions apart. The executions after
# the first `free` then wait at a Hold (tests/conftest.py) until the test has killed perflab.
def _toml(log, hold) -> str:
    command = ["sh", "-c", f"grep Cpus_allowed_list /proc/$$/status >> {shlex.quote(str(log))}; {hold.script()}", "sh",
               "sh", "-c", "i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; echo 'events: 10'"]
    return (f"[workload.counter]\ncommand = {json.dumps(command)}\n"
            'metrics = ["events: (?P<events>\\\\d+)"]\n')


def _stored(db, study: str) -> int:
    import sqlite3

    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
            return conn.execute("SELECT count(*) FROM measurements m JOIN campaigns c ON "
                                "m.campaign_id = c.id WHERE c.study = ?", (study,)).fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_kill_9_then_resume_from_the_store(tmp_path):
    from tests.conftest import Hold

    log = tmp_path / "executions.log"
    # The run study's warm-up and 3 runs pass; its 4th run (it makes at least 5) waits until
    # perflab is killed, so the kill lands in the middle of the run study on any machine.
    hold = Hold(tmp_path, 4)
    (tmp_path / "perflab.toml").write_text(_toml(log, hold))
    out, db = tmp_path / "out", tmp_path / "lab.db"
    args = [*PERFLAB, "lab", "--quick", "--studies", "run,cores", "--workload", "counter",
            "--config", str(tmp_path / "perflab.toml"), "--out", str(out), "--db", str(db)]
    proc = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        hold.wait_held(proc, timeout=240)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        hold.release()
    all_cpus = f"{min(os.sched_getaffinity(0))}-{max(os.sched_getaffinity(0))}"

    def unpinned() -> int:
        return sum(line.split()[-1] == all_cpus for line in log.read_text().splitlines())

    from perflab.store import open_store

    with open_store(str(db)) as store:
        run_camp = store.campaigns(study="run")[-1]
        before = [(m.id, m.rep) for m in store.measurements(run_camp.id)]
    executed_before = unpinned() - 1  # the run study's one warm-up
    assert (len(before), executed_before) == (3, 4)  # the 4th, in flight at the kill, not stored
    assert _stored(db, "cores") == 0

    p = subprocess.run([*PERFLAB, "lab", "--resume", "--db", str(db)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    with open_store(str(db)) as store:
        labs = store.campaigns(study="lab")
        assert len(labs) == 1 and labs[-1].status == "done"
        children = store.campaigns(parent_id=labs[-1].id)
        assert [c.name for c in children] == ["run", "cores"]  # the run child was resumed, not redone
        assert children[0].id == run_camp.id and all(c.status == "done" for c in children)
        after = [(m.id, m.rep) for m in store.measurements(run_camp.id)]
    # No stored run lost or repeated; only the missing ones ran (no second warm-up).
    assert after[:len(before)] == before
    assert sorted(rep for _, rep in after) == list(range(len(after)))
    assert unpinned() - 1 - executed_before == len(after) - len(before)
    assert re.search(rf"\({len(after) - len(before) + _stored(db, 'cores')} runs executed, "
                     rf"{len(before)} read back from the store\)", p.stdout), p.stdout[-2000:]
    html = (out / "report.html").read_text()
    assert re.search(r'<section id="run-\d+"', html) and re.search(r'<section id="cores-\d+"', html)
    # a second resume finds nothing to do; a done lab is loaded, not rerun
    p = subprocess.run([*PERFLAB, "lab", "--resume", "--db", str(db)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "nothing to resume" in p.stderr


def test_resume_with_nothing_to_resume_is_a_one_line_error(tmp_path):
    p = subprocess.run([*PERFLAB, "lab", "--resume", "--db", str(tmp_path / "x.db")], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "nothing to resume" in p.stderr and "Traceback" not in p.stderr


def test_lab_unknown_study_is_a_one_line_error(tmp_path):
    p = subprocess.run([*PERFLAB, "lab", "--studies", "run,nosuch", "--db", str(tmp_path / "x.db")],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "unknown study 'nosuch'" in p.stderr and "Traceback" not in p.stderr


def _mock_lab(tmp_path, executor):
    from perflab.platform.machine import Machine
    from perflab.platform.topology import Topology
    from perflab.store import open_store
    from perflab.studies import run_study
    from perflab.studies.lab import study as lab

    (tmp_path / "perflab.toml").write_text('[workload.nap]\ncommand = ["sleep", "0.25"]\n')
    machine = Machine(topology=Topology(cpus=(), cores=(), sockets=(), nodes=()), metadata={"hostname": "t"})
    store = open_store(str(tmp_path / "m.db"))
    config = lab.LabConfig(workload="nap", config_path=str(tmp_path / "perflab.toml"), quick=True,
                           out_dir=str(tmp_path / "out"), studies=("run",))
    return store, run_study(lab, config, store, executor, machine=machine, name="lab")


def test_lab_through_the_mock_and_its_snapshot(tmp_path):
    import io

    from rich.console import Console

    from perflab.measure.executor import MockExecutor
    from perflab.report.terminal.lab import render
    from perflab.studies.lab.study import LabResult

    store, result = _mock_lab(tmp_path, MockExecutor())
    (run,) = result.steps
    assert run.status == "done" and run.runs == 10 and run.result.benchmarks[0].summary["median"] == 0.25
    camp = store.campaign(result.campaign_id)
    assert camp.status == "done" and store.campaign(run.campaign).parent_id == camp.id
    again = LabResult.from_dict(camp.summary)
    assert [(s.name, s.status, s.runs) for s in again.steps] == [("run", "done", 10)]
    console = Console(width=140, record=True, file=io.StringIO(), color_system=None)
    run.seconds, result.seconds = 0.0, 0.0  # wall-clock of the test machine: not part of the snapshot
    render(result, console)  # each study once, then the summary
    text = console.export_text()
    snap = os.path.join(os.path.dirname(__file__), "..", "snapshots", "lab.txt")
    if os.environ.get("PERFLAB_UPDATE_SNAPSHOTS"):
        with open(snap, "w") as fh:
            fh.write(text)
    with open(snap) as fh:
        assert text == fh.read()
    store.close()


def test_slowest_event_goes_through_the_executor_and_is_replayed(tmp_path):
    from perflab.measure.executor import MockExecutor
    from perflab.model import Workload
    from perflab.store import open_store
    from perflab.studies.lab.steps import LabContext, slowest_event
    from perflab.studies.session import Session

    log = "".join(f"done processing event #{k} in {ms} ms\n" for k, ms in ((0, 3.5), (1, 9.25), (2, 4.0)))
    ex = MockExecutor(output=lambda spec: log)
    wl = Workload(name="w", argv=("w",), event_arg=("--event", "{k}"))
    with open_store(str(tmp_path / "s.db")) as store:
        cid = store.start_campaign("lab", {})
        ctx = LabContext(None, Session(ex, store, cid), None, workload=wl)
        assert slowest_event(ctx) == (1, 9.25) and len(ex.calls) == 1
        # a resumed lab reads the stored run back instead of running the workload again
        ex2 = MockExecutor(output=lambda spec: "")
        ctx2 = LabContext(None, Session(ex2, store, cid, resumed=True), None, workload=wl)
        assert slowest_event(ctx2) == (1, 9.25) and ex2.calls == []


def test_resumed_lab_loads_done_children_from_the_store(tmp_path):
    from perflab.measure.executor import MockExecutor
    from perflab.studies import resume_study

    store, result = _mock_lab(tmp_path, MockExecutor())
    store.finish_campaign(result.campaign_id, "interrupted", store.campaign(result.campaign_id).summary)
    ex = MockExecutor()
    _, again = resume_study(store, result.campaign_id, ex)
    (run,) = again.steps
    assert ex.calls == [] and run.earlier and run.campaign == result.steps[0].campaign
    assert run.result.benchmarks[0].times == result.steps[0].result.benchmarks[0].times
    assert again.executed_runs == 0 and store.campaign(result.campaign_id).status == "done"
    store.close()
