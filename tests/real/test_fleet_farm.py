"""A farm, not a node: fleet on a real 4-node local Slurm with two platforms and a slow node.

scripts/slurm-local starts one slurmd per node (node1..node4); node1-3 are platform A, node4
platform B (Slurm features), node4 at 35 % of a CPU (a slower platform) and node2 at 30 % (a
node slower than its twins), by CPU quotas of the cgroups their slurmd (and so their jobs) run
in. All four tasks run at once, so the machine's other load falls on every node alike; the
quotas are below a task's fair share of 2 CPUs (half a CPU), so they bind unless the machine is
swamped (the test checks that the slow node's cgroup was throttled before it asserts).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.real.test_fleet import SCRIPT, _env, _report, _status, _wait_idle, cluster_dir, perflab, slurm_missing, stop_cluster

LOOP = "i=0; while [ $i -lt 25000 ]; do i=$((i+1)); done"  # CPU-bound, ~0.05 s at a full CPU


def _cgroup_writable() -> bool:
    return os.access("/sys/fs/cgroup/cpu", os.W_OK) or (
        os.path.exists("/sys/fs/cgroup/cgroup.controllers") and os.access("/sys/fs/cgroup", os.W_OK))


@pytest.fixture(scope="module")
def farm(tmp_path_factory):
    """A private 4-node Slurm cluster: platforms A (3 nodes) and B (1, slower), node2 slow."""
    if why := slurm_missing():
        pytest.skip(why)
    if not _cgroup_writable():
        pytest.skip("no writable CPU cgroup (v1 /sys/fs/cgroup/cpu or v2 /sys/fs/cgroup): a node cannot be made slower")
    d = cluster_dir(tmp_path_factory, "farm")
    out = subprocess.run([str(SCRIPT), "start", str(d), "--platforms", "A:3,B:1:0.35", "--slow", "node2=0.3"],
                         capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        stop_cluster(d)
    assert out.returncode == 0, out.stdout + out.stderr
    conf = out.stdout.strip().splitlines()[-1].split("=", 1)[1]
    yield conf, d
    stop_cluster(d)


def _throttled(cluster_dir: Path, node: str) -> tuple[int, int]:
    """(periods with tasks, periods in which the node's CPU quota held them back): cpu.stat's
    nr_periods and nr_throttled, the same names in cgroup v1 and v2."""
    for cg in (cluster_dir / "cgroups").read_text().split():
        if cg.endswith("/" + node):
            stat = dict(ln.split()[:2] for ln in Path(cg, "cpu.stat").read_text().splitlines())
            return int(stat["nr_periods"]), int(stat["nr_throttled"])
    raise AssertionError(f"no cgroup of {node}")


@pytest.mark.postgres
@pytest.mark.serial  # a planted slow node or core must bind: alone on the machine
def test_farm_names_the_slow_node_within_its_platform(farm, postgres_url, tmp_path):
    conf, cluster_dir = farm
    env = _env(conf, tmp_path)
    sinfo = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %f %t"], env=env, capture_output=True, text=True).stdout
    assert sorted(sinfo.split("\n")[:-1]) == ["node1 A idle", "node2 A idle", "node3 A idle", "node4 B idle"]
    before = _throttled(cluster_dir, "node2")
    # 120 runs (~6 s a node at a full CPU): the report compares hosts on runs of the same time, and with 10 runs
    # the four jobs' start skew left windows that did not overlap, or 1 s of two blocks, in which
    # two peers cannot make node2 significant (it was at 0.3 of them there)
    perflab(["fleet", "submit", "farm", "--nodes", "4", "--db", postgres_url, "--", "run", "--runs", "120",
             "--command-name", "loop", "--", "sh", "-c", LOOP], env, tmp_path)
    _wait_idle(env, limit=240)
    after = _throttled(cluster_dir, "node2")
    periods, held = after[0] - before[0], after[1] - before[1]
    if held < 0.5 * periods:
        pytest.skip(f"node2's CPU quota held it back in only {held} of {periods} periods: the machine is "
                    "too loaded for the planted slow node to bind")

    rep = _report("farm", db=postgres_url, env=env, cwd=tmp_path)
    thin = [c for c in rep["cannot_tell"] if c["platform"].startswith("[A]")]
    if thin and not rep["slow_hosts"]:
        # Other load moved the nodes' levels so much that the report itself says it cannot tell
        # (and what would): never "no slow host". A quiet machine names node2.
        pytest.skip(f"machine too loaded to tell (load {os.getloadavg()[0]:.1f}): {thin[0]['why']}")
    # The node's own identity, with no --host-label: each slurmd's name.
    assert sorted(h["host"] for h in rep["hosts"]) == ["node1", "node2", "node3", "node4"]
    assert all(h["status"] == "done" for h in rep["hosts"]), rep["hosts"]
    plats = {p["platform"].split("]")[0] + "]": p for p in rep["platforms"]}
    assert set(plats) == {"[A]", "[B]"}
    assert plats["[A]"]["n_hosts"] == 3 and plats["[B]"]["n_hosts"] == 1
    # each platform's throughput; an interval of the host medians where there are several hosts
    a, b = plats["[A]"], plats["[B]"]
    assert a["median"] > 0 and a["ci"] and a["ci"]["low"] <= a["median"] <= a["ci"]["high"], a
    assert b["median"] > 0 and b["ci"] is None, b  # one host: no interval across hosts
    # node2 alone is slow, and only against its own platform; node4 is slower than every A node
    # (its platform's share) but has no peers, so it is never called slow.
    assert [s["host"] for s in rep["slow_hosts"]] == ["node2"], json.dumps([rep["slow_hosts"], [{k: p.get(k) for k in ("time_test", "slow_test", "note", "hosts_tested")} for p in rep["platforms"]]], default=str)
    assert rep["slow_hosts"][0]["platform"] == plats["[A]"]["platform"]
    assert plats["[A]"]["slow_hosts"] == ["node2"] and plats["[B]"]["slow_hosts"] == []
    a_fast = [h["headline"]["median"] for h in rep["hosts"] if h["host"] in ("node1", "node3")]
    node4 = next(h["headline"]["median"] for h in rep["hosts"] if h["host"] == "node4")
    assert node4 < min(a_fast)

    text = perflab(["fleet", "report", "farm", "--db", postgres_url], env, tmp_path).stdout
    assert "node2" in text and "[B]" in text and "no slow host" not in text


def _submit_and_hold_every_task(name: str, url: str, env: dict, tmp_path: Path) -> None:
    """A 4-task `run` fleet (6 runs each) whose every task has written a run and waits at its
    next one (4 runs of 24 pass the hold, one a task); the release file lets them on."""
    from tests.conftest import Hold

    hold = Hold(tmp_path, 4)
    perflab(["fleet", "submit", name, "--nodes", "4", "--db", url, "--", "run", "--runs", "6",
             "--command-name", "t", "--", *hold.wrap(["true"])], env, tmp_path)
    deadline = time.monotonic() + 180
    while len(hold._held_pids()) < 4:
        assert time.monotonic() < deadline, f"only {len(hold._held_pids())} of 4 tasks reached the hold"
        time.sleep(0.1)


@pytest.mark.postgres
def test_postgres_restarted_mid_campaign_loses_and_duplicates_no_run(farm, tmp_path):
    """The store's server stopped while every task waits to write, started 2 s later: the writes retry."""
    from perflab.store import open_store

    from tests.conftest import PgServer

    conf, _ = farm
    server = PgServer()  # the test's own: stopping the session's server would break other tests
    try:
        url = server.create_db("restart")
        env = _env(conf, tmp_path, PERFLAB_DB_RETRY_S="60")
        _submit_and_hold_every_task("restart", url, env, tmp_path)
        server.stop("fast")
        (tmp_path / "hold-release").touch()  # the held runs end and write while the server is down
        time.sleep(2)
        server.start()
        _wait_idle(env, limit=240)

        st = _status("restart", url, env, tmp_path)
        assert sorted(st) == ["0", "1", "2", "3"] and all(s["state"] == "done" for s in st.values()), st
        with open_store(url) as store:
            camps = [c for c in store.campaigns(study="run") if c.labels.get("fleet") == "restart"]
            assert sorted(c.labels["fleet_slot"] for c in camps) == ["0", "1", "2", "3"]
            assert all(c.status == "done" and c.n_measurements == 6 for c in camps), \
                [(c.status, c.n_measurements) for c in camps]
            for c in camps:  # each run once: distinct resume keys (label, params, rep)
                ms = store.measurements(c.id)
                assert len({(m.label, json.dumps(m.params, sort_keys=True), m.rep) for m in ms}) == len(ms) == 6
        rep = _report("restart", db=url, env=env, cwd=tmp_path)
        assert all(h["status"] == "done" and h["headline"]["n"] == 6 for h in rep["hosts"]), rep["hosts"]
    finally:
        server.destroy()


@pytest.mark.postgres
def test_postgres_down_past_the_retry_budget_shards_and_collect_merges(farm, tmp_path):
    """The server stopped while every task waits to write and kept down past their 1 s retry
    budget: each task keeps its runs in its own SQLite shard (exit 3), and fleet collect merges
    them; every slot ends done, each run once, with the host it ran on."""
    from perflab.store import open_store

    from tests.conftest import PgServer

    conf, _ = farm
    server = PgServer()
    try:
        url = server.create_db("lost")
        env = _env(conf, tmp_path, PERFLAB_DB_RETRY_S="1")
        _submit_and_hold_every_task("lost", url, env, tmp_path)
        server.stop("fast")
        (tmp_path / "hold-release").touch()
        _wait_idle(env, limit=240)  # every task gave up on the server and finished in its shard
        server.start()
        st = _status("lost", url, env, tmp_path)
        assert all("stored in shard" in json.dumps(s) for s in st.values()), st
        out = perflab(["fleet", "collect", "lost", "--db", url], env, tmp_path).stdout
        assert "merged" in out, out
        again = perflab(["fleet", "collect", "lost", "--db", url], env, tmp_path).stdout
        assert "no shard waiting" in again, again
        with open_store(url) as store:
            camps = [c for c in store.campaigns(study="run") if c.labels.get("fleet") == "lost"]
            assert sorted(c.labels["fleet_slot"] for c in camps) == ["0", "1", "2", "3"]
            for c in camps:  # each run once, none lost
                ms = store.measurements(c.id)
                assert len({(m.label, json.dumps(m.params, sort_keys=True), m.rep) for m in ms}) == len(ms) == 6
        rep = _report("lost", db=url, env=env, cwd=tmp_path)
        assert sorted(h["host"] for h in rep["hosts"]) == ["node1", "node2", "node3", "node4"]
        assert all(h["status"] == "done" and h["headline"]["n"] == 6 for h in rep["hosts"]), rep["hosts"]
    finally:
        server.destroy()


@pytest.mark.postgres
@pytest.mark.serial  # a planted slow node or core must bind: alone on the machine
def test_cores_fleet_lists_each_hosts_slow_cores(farm, postgres_url, tmp_path):
    """cores --concurrent on every node: each host's own verdict on its CPUs, listed per host
    (--span 0: the blocks run back to back, as this test judges the listing, not the scan)."""
    from perflab.store import open_store
    from perflab.studies.cores.result import CoresResult

    conf, _ = farm
    env = _env(conf, tmp_path)
    perflab(["fleet", "submit", "cores", "--nodes", "4", "--db", postgres_url, "--", "cores", "--concurrent",
             "--rounds", "4", "--min-rounds", "2", "--span", "0", "--", "true"], env, tmp_path)
    _wait_idle(env, limit=240)
    rep = _report("cores", db=postgres_url, env=env, cwd=tmp_path)
    assert "slow_cores" in rep and len(rep["hosts"]) == 4
    with open_store(postgres_url) as store:
        summaries = {h["host"]: store.campaign(h["campaign_id"]).summary for h in rep["hosts"]}
    found = []
    for h in rep["hosts"]:
        result = CoresResult.from_dict(summaries[h["host"]])  # the cores summary as stored today
        assert h["status"] == "done" and h["headline"]["n"] == result.runs - result.failed > 0, h
        assert [(c["core"], list(c["cpus"])) for c in h["headline"]["slow_cores"]] == \
            [(s.core, list(s.cpus)) for s in result.slow]
        found += [(h["host"], s.core) for s in result.slow]
    assert [(c["host"], c["core"]) for c in rep["slow_cores"]] == found
    text = perflab(["fleet", "report", "cores", "--db", postgres_url], env, tmp_path).stdout
    assert ("no slow core" in text) == (not found)

    # A slow core in a host's own summary (a 2-vCPU VM cannot plant one per node): its fleet report
    # lists it under that host, in the JSON and in the terminal text.
    node1 = next(h for h in rep["hosts"] if h["host"] == "node1")
    summary = summaries["node1"]
    slow = {"core": 1, "socket": 0, "node": 0, "cpus": [1], "siblings": [1], "ratio": 1.3,
            "ratio_ci": {"low": 1.2, "high": 1.4, "level": 0.95}, "p_adjusted": 0.001, "rounds": 4,
            "slower_rounds": 4}
    CoresResult.from_dict({**summary, "slow": [slow]})  # the shape the cores study stores
    with open_store(postgres_url) as store:
        store.finish_campaign(node1["campaign_id"], "done", summary={**summary, "slow": [slow]})
    rep = _report("cores", db=postgres_url, env=env, cwd=tmp_path)
    assert {"host": "node1", "core": 1, "cpus": [1], "ratio": 1.3} == \
        {k: v for k, v in rep["slow_cores"][0].items() if k in ("host", "core", "cpus", "ratio")}
    text = perflab(["fleet", "report", "cores", "--db", postgres_url], env, tmp_path).stdout
    assert "node1: core 1 (CPUs 1): cost 1.3 x" in " ".join(text.split()) and "no slow core" not in text


def test_nodes_4_one_at_a_time_visits_each_of_the_4_nodes_in_rounds(farm, tmp_path):
    """--nodes 4 --max-parallel 1 --visits 2: 8 jobs, one at a time (an array throttled to 1 ran all
    four on node1), each node visited once a round; the report lists four hosts, each once with its
    two visits, and judges them in rounds."""
    conf, _ = farm
    env = _env(conf, tmp_path)
    db = str(tmp_path / "one.db")
    out = " ".join(perflab(["fleet", "submit", "one", "--nodes", "4", "--max-parallel", "1", "--visits", "2", "--db",
                            db, "--", "run", "--runs", "3", "--command-name", "t", "--", "true"],
                           env, tmp_path).stdout.split())
    assert "on 4 distinct nodes (node1, node2, node3, node4)" in out, out
    assert "8 jobs: 2 visits to each of 4 nodes in 2 rounds, at most 1 at once" in out, out
    _wait_idle(env, limit=240)
    st = _status("one", db, env, tmp_path)
    assert len(st) == 8 and all(s["state"] == "done" for s in st.values()), st
    from perflab.store import open_store

    with open_store(db) as store:
        camps = sorted((c for c in store.campaigns(study="run") if c.labels.get("fleet") == "one"),
                       key=lambda c: c.started)
    # Round 1 in node order, round 2 rotated by one; each visit on the node its slot names.
    assert [c.labels["slurm_node"] for c in camps] == ["node1", "node2", "node3", "node4",
                                                      "node2", "node3", "node4", "node1"]
    assert [c.labels["fleet_slot"] for c in camps][4:] == ["1.2", "2.2", "3.2", "0.2"]
    # One at a time: each visit began after the one before it had finished.
    assert all(a.finished <= b.started for a, b in zip(camps, camps[1:])), [(c.started, c.finished) for c in camps]
    rep = _report("one", db=db, env=env, cwd=tmp_path)
    assert sorted(h["host"] for h in rep["hosts"]) == ["node1", "node2", "node3", "node4"]
    assert all([v["round"] for v in h["visits"]] == [1, 2] and h["headline"]["n"] == 6 for h in rep["hosts"])
    (a,) = [p for p in rep["platforms"] if p["n_hosts"] == 3]
    assert a["time_test"]["mode"] == "rounds" and a["time_test"]["rounds"] == 2, a["time_test"]
    assert a["same_time"] is False and a["time_note"].startswith("judged in 2 rounds of visits")
    text = " ".join(perflab(["fleet", "report", "one", "--db", db], env, tmp_path).stdout.split())
    assert "judged in 2 rounds of visits" in text and "(slot" not in text and "(2 of 2 visits)" in text


def test_slurm_local_refuses_bad_node_specs(tmp_path):
    if why := slurm_missing():
        pytest.skip(why)
    for args, says in ((["--nodes", "x"], "whole number"), (["--platforms", "A:0"], "NAME:COUNT"),
                       (["--platforms", "A:2:1.5"], "share"), (["--nodes", "2", "--slow", "node9=0.5"], "no node node9"),
                       (["--nodes", "3", "--platforms", "A:1"], "makes 1 node(s)")):
        r = subprocess.run([str(SCRIPT), "start", str(tmp_path / "c"), *args], capture_output=True, text=True,
                           timeout=30)
        assert r.returncode == 2 and says in r.stderr and len(r.stderr.strip().splitlines()) == 1, (args, r.stderr)


@pytest.mark.postgres
def test_a_node_that_dies_mid_campaign_fails_its_slot_and_resubmit_finishes_it(farm, postgres_url, tmp_path):
    """node3 killed (its slurmd, job step and job): NODE_FAIL from Slurm; rerun on node4, the live
    node the fleet of 3 has not measured (never a second time on a node it has)."""
    from perflab.store import open_store

    conf, cluster_dir = farm
    env = _env(conf, tmp_path)
    from tests.conftest import Hold

    # node3's second run waits until the node is killed: its campaign cannot finish first on any machine
    hold = Hold(tmp_path, 1)
    held = ["sh", "-c", f'[ "$SLURMD_NODENAME" = node3 ] || exec "$@"; {hold.script()}', "sh", "sh", "-c", LOOP]
    perflab(["fleet", "submit", "dies", "--nodes", "3", "--db", postgres_url, "--", "run", "--runs", "12",
             "--command-name", "loop", "--", *held], env, tmp_path)
    with open_store(postgres_url) as store:
        deadline = time.monotonic() + 120
        while True:  # node3 has stored a run: the node dies mid-campaign
            camps = [c for c in store.campaigns(study="run") if c.labels.get("fleet") == "dies"
                     and c.labels.get("slurm_node") == "node3" and c.n_measurements > 0]
            if camps:
                break
            assert time.monotonic() < deadline, "node3's task never stored a run"
            time.sleep(0.1)
    slot = camps[0].labels["fleet_slot"]
    hold.wait_held(None)
    r = subprocess.run([str(SCRIPT), "kill-node", str(cluster_dir), "node3"], capture_output=True, text=True)
    hold.release()
    assert r.returncode == 0, r.stderr
    _wait_idle(env, limit=240)

    st = _status("dies", postgres_url, env, tmp_path)
    assert st[slot]["state"] == "failed" and "NODE_FAIL" in st[slot]["reason"], st[slot]
    assert all(s["state"] == "done" for k, s in st.items() if k != slot), st
    out = perflab(["fleet", "resubmit", "dies", "--missing", "--db", postgres_url], env, tmp_path).stdout
    assert f"resubmitted slot(s) {slot}" in out and "rerun on node4" in out, out
    _wait_idle(env, limit=240)
    st = _status("dies", postgres_url, env, tmp_path)
    assert all(s["state"] == "done" for s in st.values()), st

    rep = _report("dies", db=postgres_url, env=env, cwd=tmp_path)
    (entry,) = [h for h in rep["hosts"] if h["slot"] == slot]
    assert entry["status"] == "done" and entry["host"] == "node4", entry  # where it ran
    assert sorted(h["host"] for h in rep["hosts"]) == ["node1", "node2", "node4"]
    assert all(h["headline"]["n"] == 12 for h in rep["hosts"])
    with open_store(postgres_url) as store:  # nothing stored twice: one finished campaign a slot
        done = [c for c in store.campaigns(study="run") if c.labels.get("fleet") == "dies" and c.status == "done"]
        assert sorted(c.labels["fleet_slot"] for c in done) == ["0", "1", "2"]
        assert all(c.n_measurements == 12 for c in done)
