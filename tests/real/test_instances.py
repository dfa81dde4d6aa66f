"""perflab instances on real processes: minihlt scans, the fork comparison's disjoint shares and PSS,
timed sleeping copies through the command line, kill -9 and resume, copies that die with perflab."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perflab.measure.executor import MockExecutor
from perflab.store import open_store
from perflab.studies import run_study
from perflab.studies.instances import study as instances
from perflab.studies.instances.study import InstancesConfig, InstancesResult
from tests.studies.test_instances import machine, one_node_box, result


@pytest.fixture
def store(tmp_path):
    with open_store(str(tmp_path / "perflab.db")) as s:
        yield s


@pytest.mark.serial  # real copies timed: alone on the machine
def test_real_minihlt_scan(store):
    from dataclasses import replace

    from perflab.measure.executor import default_executor
    from perflab.platform.host import capture
    from perflab.workloads import resolve

    wl = resolve("minihlt-quick", ())
    wl = replace(wl, argv=wl.argv + ("--events", "12"))
    here = capture()
    with default_executor() as ex:
        res = run_study(instances, InstancesConfig(wl, ns=(1, 2, 3), policies=("none",), reps=2), store, ex,
                        machine=here)
    (scan,) = res.scans
    if instances.pmu(here)[0]:
        assert all(p.ipc and p.ipc > 0 for p in scan.points)
    else:  # this VM: said in one line, throughput from time alone
        assert sum("IPC and last-level-cache misses per event not measured" in n for n in res.notes) == 1
        assert all(p.ipc is None for p in scan.points)
    assert all(p.pss_kb and p.pss_kb > 32 * 1024 for p in scan.points)
    assert res.unit == "events/s" and res.own_metric == "events_per_s"
    assert all(p.throughput > 0 for p in scan.points)
    stored = store.measurements(res.campaign_id)
    assert len(stored) == 2 * (1 + 2 + 3) and all(m.result.ok for m in stored)
    # machine throughput is at most the summed per-copy rates (startup and the makespan count)
    for p in scan.points:
        assert p.throughput <= p.own_metric * p.n * 1.01


def test_real_minihlt_first_splits_events_disjointly():
    """The fork comparison's disjoint shares: events 0-3 + 4-7 are events 0-7 (steps are additive)."""
    from perflab.measure.executor import default_executor
    from perflab.workloads import resolve

    wl = resolve("minihlt-quick", ())
    with default_executor() as ex:
        def steps(*extra):
            r = ex.run(wl.spec(argv=wl.argv + extra))
            assert r.ok, r.stderr_tail
            return r.metrics["steps"], r.metrics["events"]

        whole = steps("--events", "8")
        a = steps("--fork", "2", "--first", "0", "--events", "4")
        b = steps("--fork", "1", "--first", "4", "--events", "4")
    assert whole[1] == a[1] + b[1] == 8
    assert whole[0] == a[0] + b[0]


def test_real_pss_counts_a_fork_masters_shared_pages_once():
    """PSS of concurrent copies through the real executor: a master with 2 forked workers holds
    its static data once, where 2 separate copies hold it twice (max RSS counts it per worker)."""
    from perflab.measure.executor import default_executor
    from perflab.workloads import resolve

    wl = resolve("minihlt-quick", ())
    with default_executor() as ex:
        two = ex.run_concurrent([wl.spec(argv=wl.argv + ("--events", "6"), sample_pss=True, params={"copy": k})
                                 for k in range(2)]).results
        forked = ex.run_concurrent([wl.spec(argv=wl.argv + ("--fork", "2", "--events", "6"),
                                            sample_pss=True)]).results[0]
        plain = ex.run_concurrent([wl.spec(argv=wl.argv + ("--events", "6"))]).results[0]
    assert all(r.ok for r in (*two, forked, plain))
    copies = sum(r.metrics["pss_kb"] for r in two)
    # 32 MB of static data and more; the peak is the largest of the sampler's readings, a lower
    # bound: on a loaded machine a copy touched its last pages after the last one (31.2 MB once)
    assert 0.75 * 32 * 1024 < two[0].metrics["pss_kb"] < 4 * 32 * 1024
    assert forked.metrics["pss_kb"] < 0.75 * copies
    assert "pss_kb" not in plain.metrics  # sampled only when asked


@pytest.mark.serial  # real copies timed: alone on the machine
def test_cli_real_copies_per_second_json(tmp_path, capsys):
    from perflab.cli import main

    out = tmp_path / "inst.json"
    main(["instances", "--n", "1,2", "--policy", "compact", "--reps", "2", "--db", str(tmp_path / "p.db"),
          "--json", str(out), "--", "sleep", "0.05"])
    data = json.loads(out.read_text())["result"]
    assert data["unit"] == "copies/s" and data["ns"] == [1, 2]
    tp = [p["throughput"] for p in data["scans"][0]["points"]]
    assert 10 < tp[0] < 21 and tp[1] > 1.3 * tp[0]  # two sleeping copies overlap
    ci = data["scans"][0]["points"][0]["ci"]
    assert set(ci) == {"low", "high", "level"} and ci["level"] == 0.5
    # 2 rounds: a 50 % interval, printed as such, and no test can name an optimum
    assert data["optimum_n"] is None and data["verdict"].startswith("not enough evidence: 2 rounds per point")
    text = capsys.readouterr().out
    assert "answer: not enough evidence: 2 rounds per point" in text and "(50% CI)" in text


def test_kill_9_then_resume(tmp_path):
    """SIGKILL the CLI mid-study, resume: no stored copy repeated or lost, the same result shape."""
    from tests.conftest import Hold

    db = tmp_path / "k.db"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    # The 10th copy started waits until after the kill: the rounds before it (7 to 9 copies, a
    # round has at most 3) are stored and the study cannot have finished, however fast the machine.
    hold = Hold(tmp_path, 9)
    argv = [sys.executable, "-m", "perflab", "instances", "--n", "1,2,3", "--policy", "none", "--reps", "3",
            "--db", str(db), "--", *hold.wrap(["sleep", "0.1"])]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        hold.wait_held(proc)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        hold.release()
    with open_store(str(db)) as s:
        camp = s.campaigns()[-1]
        before = {(m.label, json.dumps(m.params, sort_keys=True), m.rep): (m.id, m.result.wall_ns)
                  for m in s.measurements(camp.id)}
        assert camp.status == "running" and 7 <= len(before) <= 9
    out = tmp_path / "resumed.json"
    p = subprocess.run([sys.executable, "-m", "perflab", "resume", str(camp.id), "--db", str(db),
                        "--json", str(out)], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "answer: " in p.stdout and f"campaign {camp.id}, resumed" in p.stdout
    res = InstancesResult.from_dict(json.loads(out.read_text())["result"])
    with open_store(str(db)) as s:
        after = s.measurements(camp.id)
        keys = [(m.label, json.dumps(m.params, sort_keys=True), m.rep) for m in after]
        assert len(keys) == len(set(keys)) == 3 * (1 + 2 + 3)
        for m in after:  # nothing stored before the kill was run again or lost
            k = (m.label, json.dumps(m.params, sort_keys=True), m.rep)
            if k in before:
                assert before[k] == (m.id, m.result.wall_ns)
        assert s.campaign(camp.id).status == "done"
    assert res.ns == [1, 2, 3] and [p.reps for p in res.scans[0].points] == [3, 3, 3]
    # the same shape as an uninterrupted run of the stored config
    ex = MockExecutor(lambda spec: result(0.1, ex.clock_ns, {"pss_kb": 512.0}))
    with open_store(str(tmp_path / "whole.db")) as s2:
        whole = run_study(instances, InstancesConfig.from_dict(camp.config), s2, ex,
                          machine=machine(one_node_box()))
    assert _shape(res.as_dict()) == _shape(whole.as_dict())


def _shape(obj):
    """Keys and list lengths of a result, values left out."""
    if isinstance(obj, dict):
        return {k: _shape(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_shape(v) for v in obj]
    return None


def _copies_of(marker: str) -> list[int]:
    """Pids whose command line is `sleep MARKER` (the copies of the test below)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/cmdline", "rb") as fh:
                    if fh.read().split(b"\0")[:2] == [b"sleep", marker.encode()]:
                        out.append(int(d))
            except OSError:
                pass
    return out


def test_copies_die_with_a_killed_perflab(tmp_path):
    """kill -9 of perflab: its running copies go too (the trampoline's parent-death signal),
    instead of running on unmeasured and loading the machine."""
    marker = f"{37 + os.getpid() % 1000 / 1000:.3f}"  # unique to this test process
    p = subprocess.Popen([sys.executable, "-m", "perflab", "instances", "--n", "2", "--reps", "1", "--db",
                          str(tmp_path / "k.db"), "--", "sleep", marker], cwd=tmp_path,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while len(_copies_of(marker)) < 2:
            assert p.poll() is None and time.monotonic() < deadline, "the copies never started"
            time.sleep(0.05)
        p.send_signal(signal.SIGKILL)
        p.wait()
        deadline = time.monotonic() + 10
        while _copies_of(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _copies_of(marker), "copies outlived the perflab that started them"
    finally:
        for pid in _copies_of(marker):
            os.kill(pid, signal.SIGKILL)
