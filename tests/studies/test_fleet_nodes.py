"""A fleet's nodes are distinct, and a report knows when they were measured: without a cluster.

sinfo and sbatch are stand-ins on PATH (sinfo prints a recorded node list, sbatch logs its argv
and answers job ids); the real 4-node cluster runs the same in tests/real/test_fleet_farm.py.
"""

from __future__ import annotations

import json
import os
import shlex
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from perflab.errors import PerflabError
from perflab.fleet import state
from perflab.fleet.report import build
from perflab.fleet.submit import FleetRequest, resubmit, submit
from perflab.fleet.submitter import Placement, Slurm, constraint_matches
from perflab.fleet.timing import platform_windows
from perflab.store import open_store

from tests.studies.test_fleet_units import _NoBatch, _task

SINFO = """node1|debug*|idle|a
node2|debug*|down*|a
node3|debug*|alloc|a,fast
node4|debug*|idle|b
node5|debug*|drain|a
node9|long|idle|a
node1|long|idle|a
"""


def _fake_slurm(tmp_path: Path, monkeypatch, sinfo: str = SINFO) -> Path:
    """sinfo prints ``sinfo``; sbatch appends its argv (one JSON line) to a log and prints 100, 101, ..."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (tmp_path / "sinfo.txt").write_text(sinfo)
    log = tmp_path / "sbatch.log"
    scripts = {
        "sinfo": f"#!/bin/sh\ncat {shlex.quote(str(tmp_path / 'sinfo.txt'))}\n",
        "sbatch": "#!/usr/bin/env python3\nimport json, sys\n"
                  f"log = {str(log)!r}\n"
                  "n = sum(1 for _ in open(log)) if __import__('os').path.exists(log) else 0\n"
                  "open(log, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\nprint(100 + n)\n",
        "squeue": "#!/bin/sh\n", "scontrol": "#!/bin/sh\n", "sacct": "#!/bin/sh\n",
    }
    for name, text in scripts.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return log


def _argvs(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def _opt(argv: list[str], name: str) -> str | None:
    return next((a.split("=", 1)[1] for a in argv if a.startswith(name + "=")), None)


def test_constraint_expressions():
    assert constraint_matches("a", ["a", "fast"]) and not constraint_matches("b", ["a"])
    assert constraint_matches("a&fast", ["a", "fast"]) and not constraint_matches("a&fast", ["a"])
    assert constraint_matches("b|fast", ["a", "fast"]) and constraint_matches("[b|a]&(fast)", ["a", "fast"])
    assert not constraint_matches("a", ["(null)"])
    for bad in ("a*2", "a&", "(a", "a b"):
        with pytest.raises(PerflabError, match="--nodelist"):
            constraint_matches(bad, ["a"])


def test_up_nodes_of_the_partition_idle_first(tmp_path, monkeypatch):
    _fake_slurm(tmp_path, monkeypatch)
    up, other = Slurm().up_nodes(Placement(nodes=4))
    assert up == ["node1", "node4", "node3"] and other == ["node2 (down*)", "node5 (drain)"]
    assert Slurm().up_nodes(Placement(nodes=2, partition="long"))[0] == ["node9", "node1"]
    assert Slurm().up_nodes(Placement(nodes=2, constraint="a"))[0] == ["node1", "node3"]


def _request(tmp_path: Path, name: str, **placement) -> FleetRequest:
    return FleetRequest(name=name, study_argv=("run", "--runs", "3", "--", "true"),
                        placement=Placement(**placement), db=str(tmp_path / "f.db"), log_dir=str(tmp_path / name))


def test_nodes_n_pins_one_job_to_each_of_n_distinct_nodes_one_at_a_time(tmp_path, monkeypatch):
    log = _fake_slurm(tmp_path, monkeypatch)
    with open_store(str(tmp_path / "f.db")) as store:
        fleet = submit(_request(tmp_path, "one", nodes=3, max_parallel=1, visits=1), store, Slurm())
    argvs = _argvs(log)
    assert [_opt(a, "--nodelist") for a in argvs] == ["node1", "node4", "node3"]
    assert [a[-1] for a in argvs] == ["0", "1", "2"]  # the slot, as the script's argument
    assert not any(a.startswith("--export") for argv in argvs for a in argv)  # the user's SBATCH_EXPORT holds
    # One at a time: each job waits for the one before it to end, whatever its state.
    assert [_opt(a, "--dependency") for a in argvs] == [None, "afterany:100", "afterany:101"]
    assert not any(a.startswith("--array") for argv in argvs for a in argv)
    assert fleet.slots == ["0", "1", "2"] and fleet.nodes == {"0": "node1", "1": "node4", "2": "node3"}
    assert fleet.jobs == {"0": "100", "1": "101", "2": "102"} and fleet.config["note"] == ""


def test_k_at_a_time_is_k_chains(tmp_path, monkeypatch):
    log = _fake_slurm(tmp_path, monkeypatch, "".join(f"n{i}|debug*|idle|\n" for i in range(5)))
    with open_store(str(tmp_path / "f.db")) as store:
        submit(_request(tmp_path, "two", nodes=5, max_parallel=2, visits=1), store, Slurm())
    assert [_opt(a, "--dependency") for a in _argvs(log)] == \
        [None, None, "afterany:100", "afterany:101", "afterany:102"]


def test_fewer_nodes_up_than_asked_says_so_and_none_up_is_an_error(tmp_path, monkeypatch):
    log = _fake_slurm(tmp_path, monkeypatch)
    with open_store(str(tmp_path / "f.db")) as store:
        fleet = submit(_request(tmp_path, "few", nodes=6), store, Slurm())
        assert fleet.slots == ["0", "1", "2"] and len(_argvs(log)) == 3
        assert fleet.config["note"] == ("only 3 of the 6 nodes asked for are up in the default partition: one "
                                        "task on each of node1, node4, node3; not up: node2 (down*), node5 (drain)")
        assert all(_opt(a, "--dependency") is None for a in _argvs(log))  # all at once by default
        with pytest.raises(PerflabError, match="no node is up in the default partition with --constraint zz"):
            submit(_request(tmp_path, "none", nodes=2, constraint="zz"), store, Slurm())
        with pytest.raises(PerflabError, match="names node1 more than once"):
            submit(_request(tmp_path, "dup", nodelist=("node1", "node4", "node1")), store, Slurm())
        assert state.find(store, "none") is None and state.find(store, "dup") is None
    assert len(_argvs(log)) == 3  # nothing submitted for the refused ones


def test_host_label_keeps_an_array_of_stand_in_nodes(tmp_path, monkeypatch):
    log = _fake_slurm(tmp_path, monkeypatch)
    req = FleetRequest(name="box", study_argv=("run", "--", "true"), placement=Placement(nodes=3, max_parallel=1),
                       db=str(tmp_path / "f.db"), log_dir=str(tmp_path / "box"), host_label="node")
    with open_store(str(tmp_path / "f.db")) as store:
        fleet = submit(req, store, Slurm())
    (argv,) = _argvs(log)
    assert _opt(argv, "--array") == "0,1,2%1" and fleet.nodes == {}


class _Failed(Slurm):
    """Every slot's job has failed (as squeue, scontrol and sacct would say of it)."""

    def status(self, jobs):
        from perflab.fleet.submitter import SlotState

        return {s: SlotState(s, j, "failed", "NODE_FAIL") for s, j in jobs.items()}


def test_resubmit_moves_a_slot_off_a_dead_node_to_one_the_fleet_has_not_measured(tmp_path, monkeypatch):
    log = _fake_slurm(tmp_path, monkeypatch, "node1|debug*|idle|\nnode2|debug*|idle|\nnode3|debug*|idle|\n")
    with open_store(str(tmp_path / "f.db")) as store:
        fleet = submit(_request(tmp_path, "dies", nodes=2), store, Slurm())
        assert fleet.nodes == {"0": "node1", "1": "node2"}
        (tmp_path / "sinfo.txt").write_text("node1|debug*|idle|\nnode2|debug*|down*|\nnode3|debug*|idle|\n")
        _task(store, "dies", 0, "node1", "EPYC", [1.0, 1.1])  # slot 0 finished on node1
        jobs, notes = resubmit(store, state.load(store, "dies"), _Failed(), "")
        assert list(jobs) == ["1"] and _opt(_argvs(log)[-1], "--nodelist") == "node3"
        assert notes == ["slot 1: node2 is not up (down*); rerun on node3, a node this fleet has not measured"]
        assert state.load(store, "dies").nodes == {"0": "node1", "1": "node3"}
        # node3 dies too, and no node is left that the fleet has not measured: nothing resubmitted.
        (tmp_path / "sinfo.txt").write_text("node1|debug*|idle|\nnode2|debug*|down*|\nnode3|debug*|down*|\n")
        with pytest.raises(PerflabError, match="slot 1: node3 is not up \\(down\\*\\) and every node that is up "
                                               "has a slot of this fleet; left failed"):
            resubmit(store, state.load(store, "dies"), _Failed(), "")
    assert len(_argvs(log)) == 3


T0 = datetime(2026, 11, 26, 6, 0, tzinfo=timezone.utc)


def test_windows_all_overlapping_or_apart():
    m = timedelta(minutes=1)
    same = platform_windows({"a": (T0, T0 + 2 * m), "b": (T0 + m, T0 + 3 * m), "c": (T0, T0 + m)})
    assert same == {"same_time": True, "apart": [], "note": None}
    apart = platform_windows({"a": (T0, T0 + m), "b": (T0 + 2 * m, T0 + 3 * m), "c": (T0, T0 + 3 * m)})
    assert apart["same_time"] is False and apart["apart"] == ["a", "b"]
    assert apart["note"].startswith("not measured at the same time: 2 of 3 hosts")
    assert "06:02:00-06:03:00" in apart["note"]


def _shift(store, cid: int, start: datetime, end: datetime) -> None:
    c = store.t["campaigns"]
    with store.engine.begin() as conn:
        conn.execute(c.update().where(c.c.id == cid).values(started=start, finished=end))


def test_report_notes_disjoint_windows_and_lists_a_node_once(tmp_path):
    with open_store(str(tmp_path / "r.db")) as store:
        fleet = state.create(store, "farm", {"study": "run", "slots": [str(i) for i in range(5)],
                                             "log_dir": str(tmp_path), "job_name": "j", "shards": False})
        rates = {0: 100, 1: 100, 2: 60, 3: 101, 4: 99}
        hosts = {0: "n0", 1: "n1", 2: "n2", 3: "n3", 4: "n0"}  # slot 4 ran on n0 again
        for slot, rate in rates.items():
            cid = _task(store, "farm", slot, hosts[slot], "EPYC", [rate * (1 + 0.002 * i) for i in range(12)])
            _shift(store, cid, T0 + timedelta(minutes=2 * slot), T0 + timedelta(minutes=2 * slot + 1))
        rep = build(store, fleet, _NoBatch())
    assert sorted(h["host"] for h in rep["hosts"]) == ["n0", "n1", "n2", "n3"]  # one node, one host
    (n0,) = [h for h in rep["hosts"] if h["host"] == "n0"]
    assert n0["slot"] == "4" and n0["other_slots"] == [{"slot": "0", "status": "done", "campaign_id": 2}]
    (plat,) = rep["platforms"]
    assert plat["n_hosts"] == 4 and plat["same_time"] is False
    assert "not measured at the same time" in plat["time_note"]
    (slow,) = rep["slow_hosts"]
    assert slow["host"] == "n2" and "disjoint from 3 of its 3 peers'" in slow["evidence"]


def test_status_of_many_pinned_jobs_asks_scontrol_once(tmp_path, monkeypatch):
    """One job per node: finished jobs are read from one scontrol listing, not one call a node."""
    _fake_slurm(tmp_path, monkeypatch)
    calls = tmp_path / "scontrol.log"
    records = "".join(f"JobId={100 + i} JobName=x JobState={'COMPLETED' if i else 'NODE_FAIL'} ExitCode=0:0\\n"
                      for i in range(20))
    (tmp_path / "bin" / "scontrol").write_text(f"#!/bin/sh\necho \"$*\" >>{shlex.quote(str(calls))}\nprintf '{records}'\n")
    jobs = {str(i): str(100 + i) for i in range(20)}
    st = Slurm().status(jobs)
    assert calls.read_text().splitlines() == ["-o show job"]
    assert st["0"].state == "failed" and st["0"].raw == "NODE_FAIL"
    assert all(st[str(i)].state == "done" for i in range(1, 20))


def test_one_at_a_time_visits_every_node_three_times_in_rotated_rounds(tmp_path, monkeypatch):
    log = _fake_slurm(tmp_path, monkeypatch, "".join(f"n{i}|debug*|idle|\n" for i in range(1, 5)))
    with open_store(str(tmp_path / "f.db")) as store:
        fleet = submit(_request(tmp_path, "rounds", nodes=4, max_parallel=1), store, Slurm())
    argvs = _argvs(log)
    # Default 3 visits (fewer at once than nodes): 12 jobs in one chain, round r rotated by r.
    assert len(argvs) == 12 and fleet.config["visits"] == 3
    assert [_opt(a, "--nodelist") for a in argvs] == ["n1", "n2", "n3", "n4", "n2", "n3", "n4", "n1",
                                                      "n3", "n4", "n1", "n2"]
    assert [a[-1] for a in argvs][:5] == ["0.1", "1.1", "2.1", "3.1", "1.2"]
    assert [_opt(a, "--dependency") for a in argvs] == [None] + [f"afterany:{100 + i}" for i in range(11)]
    assert fleet.config["round_of"]["3.2"] == 2 and fleet.nodes["3.2"] == "n4" and len(fleet.jobs) == 12
    assert fleet.config["placement"]["visits"] == 3


def test_visits_one_keeps_one_job_a_node_and_visits_without_max_parallel_chain_the_rounds(tmp_path, monkeypatch):
    log = _fake_slurm(tmp_path, monkeypatch, "".join(f"n{i}|debug*|idle|\n" for i in range(1, 4)))
    with open_store(str(tmp_path / "f.db")) as store:
        fleet = submit(_request(tmp_path, "v1", nodes=3, max_parallel=1, visits=1), store, Slurm())
        assert fleet.slots == ["0", "1", "2"] and fleet.config["round_of"] == {} and len(_argvs(log)) == 3
        fleet = submit(_request(tmp_path, "v2", nodes=3, visits=2), store, Slurm())
        # At once within a round; a node's second visit waits for its round-1 job slot (K = 3 chains).
        assert [_opt(a, "--dependency") for a in _argvs(log)[3:]] == [None, None, None, "afterany:103",
                                                                      "afterany:104", "afterany:105"]
        assert fleet.config["placement"]["max_parallel"] is None
        with pytest.raises(PerflabError, match="--visits needs one job per node"):
            submit(FleetRequest(name="box", study_argv=("run", "--", "true"),
                                placement=Placement(nodes=3, max_parallel=1, visits=2), db=str(tmp_path / "f.db"),
                                log_dir=str(tmp_path / "box"), host_label="node"), store, Slurm())
    assert len(_argvs(log)) == 9


def test_report_of_visits_one_entry_a_node_judged_in_rounds(tmp_path):
    """12 visits (4 nodes x 3 rounds, one at a time) stored as campaigns: one host a node, its
    visits listed, mode rounds, the slow node named with its per-round ratios; terminal and HTML
    say what the JSON says."""
    import io

    from rich.console import Console

    from perflab.fleet.render import report_html, report_terminal

    rates = {"n1": 100, "n2": 70, "n3": 101, "n4": 99}
    load = [1.0, 0.8, 1.1]  # the machine's state, round by round
    slots = [f"{i}.{r}" for r in (1, 2, 3) for i in range(4)]
    with open_store(str(tmp_path / "r.db")) as store:
        fleet = state.create(store, "farm", {"study": "run", "slots": slots, "visits": 3, "log_dir": str(tmp_path),
                                             "job_name": "j", "shards": False,
                                             "round_of": {s: int(s.split(".")[1]) for s in slots},
                                             "nodes": {s: f"n{int(s[0]) + 1}" for s in slots}})
        for k, slot in enumerate(slots):
            host, r = f"n{int(slot[0]) + 1}", int(slot.split(".")[1])
            cid = _task(store, "farm", slot, host, "EPYC",
                        [rates[host] * load[r - 1] * (1 + 0.01 * ((i * 7 + k) % 5)) for i in range(8)])
            _shift(store, cid, T0 + timedelta(minutes=k), T0 + timedelta(minutes=k, seconds=40))
        rep = build(store, fleet, _NoBatch())
    assert sorted(h["host"] for h in rep["hosts"]) == ["n1", "n2", "n3", "n4"]
    n2 = next(h for h in rep["hosts"] if h["host"] == "n2")
    assert [v["round"] for v in n2["visits"]] == [1, 2, 3] and n2["headline"]["n"] == 24
    (plat,) = rep["platforms"]
    tt = plat["time_test"]
    assert tt["mode"] == "rounds" and tt["rounds"] == 3 and tt["df"] == 6.0 and tt["visits"] == 3
    assert all(0.65 < r < 0.75 for r in tt["round_ratios"]["n2"])
    assert plat["same_time"] is False and plat["time_note"].startswith("judged in 3 rounds of visits")
    (slow,) = rep["slow_hosts"]
    assert slow["host"] == "n2" and "in each of 3 rounds of visits" in slow["evidence"]
    buf = io.StringIO()
    report_terminal(rep, Console(file=buf, width=400))
    text = " ".join(buf.getvalue().split())
    assert "judged in 3 rounds of visits" in text and "(3 of 3 visits)" in text and "(slot" not in text
    assert text.count("n2 (slow)") == 1 and slow["evidence"] in text
    page = report_html(rep)
    assert "judged in 3 rounds of visits" in page and "3 of 3 visits" in page


def test_resubmit_reruns_a_failed_visit_on_its_own_node_only(tmp_path, monkeypatch):
    log = _fake_slurm(tmp_path, monkeypatch, "node1|debug*|idle|\nnode2|debug*|idle|\nnode3|debug*|idle|\n")
    with open_store(str(tmp_path / "f.db")) as store:
        fleet = submit(_request(tmp_path, "visits", nodes=2, max_parallel=1), store, Slurm())
        assert fleet.slots == ["0.1", "1.1", "1.2", "0.2", "0.3", "1.3"] and len(_argvs(log)) == 6
        for slot in ("0.1", "1.1", "1.2", "0.2", "0.3"):
            _task(store, "visits", slot, fleet.nodes[slot], "EPYC", [1.0, 1.1])
        jobs, notes = resubmit(store, state.load(store, "visits"), _Failed(), "")
        # node2's third visit reruns on node2, never on node3 (another host's visit).
        assert list(jobs) == ["1.3"] and _opt(_argvs(log)[-1], "--nodelist") == "node2" and notes == []
        (tmp_path / "sinfo.txt").write_text("node1|debug*|idle|\nnode2|debug*|down*|\nnode3|debug*|idle|\n")
        with pytest.raises(PerflabError, match="slot 1.3: node2 is not up \\(down\\*\\); a visit is measured on "
                                               "its own node, so it is left failed"):
            resubmit(store, state.load(store, "visits"), _Failed(), "")
    assert len(_argvs(log)) == 7
