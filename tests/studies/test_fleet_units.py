"""Fleet pieces without a batch system: slow-node statistics, report, collect (the batch script run
by bash and collection into PostgreSQL: tests/real/test_fleet_units.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perflab.fleet import state
from perflab.fleet.report import build
from perflab.fleet.submit import split_password
from perflab.model import RunResult
from perflab.stats.peers import slow_members
from perflab.store import open_store


def test_split_password():
    assert split_password("postgresql://me:p%40ss@db:5432/lab") == ("postgresql://me@db:5432/lab", "p@ss")
    assert split_password("postgresql://me@db/lab") == ("postgresql://me@db/lab", None)
    assert split_password("/data/lab.db") == ("/data/lab.db", None)


def _fleet(rng, hosts: int, n: int, platforms: int = 1, slow: dict | None = None, spread: float = 0.03):
    groups = {}
    for p in range(platforms):
        base = 100.0 * (1 + 0.5 * p)  # a faster generation is a platform, not a slow node
        groups[f"p{p}"] = {f"p{p}h{h}": base * (slow or {}).get(f"p{p}h{h}", 1.0)
                           * (1 + spread * rng.standard_normal(n)) for h in range(hosts)}
    return groups


def test_planted_slow_host_is_found_and_nothing_else():
    rng = np.random.default_rng(3)
    tests = slow_members(_fleet(rng, 30, 40, platforms=2, slow={"p1h7": 0.9}))
    flagged = [t.member for t in tests if t.slow]
    assert flagged == ["p1h7"]
    t = next(t for t in tests if t.member == "p1h7")
    assert 0.85 < t.ratio < 0.93 and t.high < 1.0 and t.level >= 0.95 and t.p_adjusted < 1e-6


def test_no_slow_host_in_a_uniform_fleet():
    """Null: identical hosts; over 20 fleets of 40 hosts, Holm keeps every verdict quiet."""
    for seed in range(20):
        rng = np.random.default_rng(100 + seed)
        assert not [t.member for t in slow_members(_fleet(rng, 40, 20)) if t.slow], seed


def test_small_effect_below_min_effect_is_not_slow():
    rng = np.random.default_rng(5)
    tests = slow_members(_fleet(rng, 20, 200, slow={"p0h3": 0.98}, spread=0.01), min_effect=0.03)
    t = next(t for t in tests if t.member == "p0h3")
    assert t.p_adjusted < 0.05 and not t.slow  # significant, but smaller than the minimum effect


def test_large_groups_use_the_same_test_as_scipy():
    from scipy.stats import mannwhitneyu

    rng = np.random.default_rng(9)
    groups = _fleet(rng, 12, 600, slow={"p0h0": 0.99})
    tests = {t.member: t for t in slow_members(groups)}
    mine = groups["p0"]["p0h0"]
    peers = np.concatenate([v for k, v in groups["p0"].items() if k != "p0h0"])
    ref = mannwhitneyu(mine, peers, alternative="two-sided", method="asymptotic").pvalue
    assert tests["p0h0"].p_value == pytest.approx(ref, rel=1e-6)
    assert tests["p0h0"].peers_median == pytest.approx(float(np.median(peers)))


class _NoBatch:
    """The batch system's view of a fleet whose jobs are long gone: nothing known."""

    name = "none"

    def status(self, jobs):
        return {}

    def log_path(self, log_dir, job_name, job):
        return Path(log_dir) / f"{job_name}-{job}.out"


def _result(rate: float) -> RunResult:
    return RunResult(wall_ns=int(1e9 / rate), user_s=0.1, sys_s=0.0, maxrss_kb=1000, minflt=0, majflt=0,
                     nvcsw=0, nivcsw=0, exit_code=0, metrics={"events_per_s": rate})


def _task(store, fleet: str, slot: int, host: str, cpu: str, rates, status: str = "done",
          features: str = "") -> int:
    hid = store.add_host({"hostname": host, "cpu_model": cpu, "mem_total_bytes": 64 * 2**30,
                          "kernel": {"release": "6.1.0"}}, {"sockets": [0, 1], "cores": list(range(32))})
    labels = {"fleet": fleet, "fleet_slot": str(slot), "slurm_node": host}
    if features:
        labels["slurm_features"] = features
    cid = store.start_campaign("run", {"commands": ["w"]}, host_id=hid, labels=labels)
    for i, r in enumerate(rates):
        store.add_measurement(cid, _result(r), {}, rep=i, label="w")
    if status != "running":
        store.finish_campaign(cid, status, summary={"benchmarks": [{"command": "w"}]})
    return cid


def test_report_shape_platforms_slow_and_missing(tmp_path, store_url):
    rng = np.random.default_rng(11)
    with open_store(store_url) as store:
        fleet = state.create(store, "farm", {"study": "run", "slots": [str(i) for i in range(13)],
                                             "log_dir": str(tmp_path), "job_name": "j", "shards": False})
        for slot in range(12):
            cpu = "EPYC 7742" if slot < 6 else "Xeon 6248"
            factor = 0.85 if slot == 8 else 1.0
            _task(store, "farm", slot, f"n{slot:02d}", cpu, 1000 * (1 + slot // 6) * factor
                  * (1 + 0.01 * rng.standard_normal(30)))
        rep = build(store, fleet, _NoBatch())
    assert list(rep) == ["fleet", "hosts", "platforms", "slow_hosts", "missing", "cannot_tell"]
    assert len(rep["hosts"]) == 12 and {h["status"] for h in rep["hosts"]} == {"done"}
    assert {p["cpu_model"] for p in rep["platforms"]} == {"EPYC 7742", "Xeon 6248"}
    assert all(p["n_hosts"] == 6 and p["sockets"] == 2 and p["cores"] == 32 for p in rep["platforms"])
    assert [s["host"] for s in rep["slow_hosts"]] == ["n08"]
    assert rep["slow_hosts"][0]["ci"]["level"] >= 0.95 and "Holm" in rep["slow_hosts"][0]["evidence"]
    assert rep["missing"] == [{"slot": "12", "status": "pending", "job": None, "reason": "not submitted"}]
    h = rep["hosts"][0]["headline"]
    assert h["quantity"] == "events_per_s" and h["n"] == 30 and h["ci"]["level"] >= 0.95


def test_cost_takes_a_fleets_platform_throughput(tmp_path):
    from perflab.studies.cost.study import load_platforms, run_cost

    rng = np.random.default_rng(2)
    db = str(tmp_path / "c.db")
    with open_store(db) as store:
        state.create(store, "farm", {"study": "run", "slots": [str(i) for i in range(8)],
                                     "log_dir": str(tmp_path), "job_name": "j", "shards": False})
        for slot in range(8):
            cpu = "EPYC 7742" if slot < 4 else "Xeon 6248"
            _task(store, "farm", slot, f"n{slot}", cpu, (2000 if slot < 4 else 1000) * (1 + 0.01 * rng.standard_normal(9)))
    toml = tmp_path / "p.toml"
    toml.write_text(
        "[requirement]\ntarget_events_per_s = 100000\npower_envelope_kw = 100\n"
        "[[platform]]\nname = 'rome'\nsockets = 2\ntdp_w = 225\nthroughput_from_fleet = 'farm'\n"
        "fleet_platform = 'epyc'\nprices = { board = 500, cpu = 4000 }\n"
        "[[platform]]\nname = 'cascade'\nsockets = 2\ntdp_w = 150\nthroughput_from_fleet = 'farm'\n"
        "fleet_platform = 'xeon'\nprices = { board = 500, cpu = 3000 }\n")
    with open_store(db) as store:
        res = run_cost(load_platforms(str(toml)), store)
    by = {c.name: c for c in res.platforms}
    assert by["rome"].throughput_per_node == pytest.approx(2000, rel=0.02)
    assert by["cascade"].throughput_per_node == pytest.approx(1000, rel=0.02)
    assert "fleet farm: median of 4 hosts (EPYC 7742" in by["rome"].throughput_source
    toml.write_text(toml.read_text().replace("fleet_platform = 'xeon'\n", ""))
    with open_store(db) as store, pytest.raises(Exception, match="2 platform.s. measured; give fleet_platform"):
        run_cost(load_platforms(str(toml)), store)


def test_slurm_features_split_one_cpu_model_into_platforms(tmp_path):
    """Nodes of one CPU model but two Slurm features are two platforms: a node of the slower
    feature is never slow against the other's; cost picks a platform by its feature exactly."""
    from perflab.studies.cost.study import load_platforms, run_cost

    rng = np.random.default_rng(5)
    db = str(tmp_path / "f.db")
    with open_store(db) as store:
        fleet = state.create(store, "farm", {"study": "run", "slots": [str(i) for i in range(7)],
                                             "log_dir": str(tmp_path), "job_name": "j", "shards": False})
        for slot in range(7):
            feature = "A" if slot < 4 else "B"
            rate = (2000 if feature == "A" else 1000) * (0.7 if slot == 1 else 1.0)
            _task(store, "farm", slot, f"n{slot}", "AMD EPYC 7742", rate * (1 + 0.01 * rng.standard_normal(20)),
                  features=feature)
        rep = build(store, fleet, _NoBatch())
    keys = sorted(p["platform"] for p in rep["platforms"])
    assert [k[:4] for k in keys] == ["[A] ", "[B] "] and all("AMD EPYC 7742" in k for k in keys)
    assert [s["host"] for s in rep["slow_hosts"]] == ["n1"]  # not n4-n6, half as fast as A
    toml = tmp_path / "p.toml"
    toml.write_text(
        "[requirement]\ntarget_events_per_s = 100000\npower_envelope_kw = 100\n"
        "[[platform]]\nname = 'b'\nsockets = 2\ntdp_w = 225\nthroughput_from_fleet = 'farm'\n"
        "fleet_platform = 'B'\nprices = { board = 500, cpu = 4000 }\n")
    with open_store(db) as store:
        (b,) = run_cost(load_platforms(str(toml)), store).platforms
    assert b.throughput_per_node == pytest.approx(1000, rel=0.02) and "[B]" in b.throughput_source


def test_scontrol_records_map_to_task_ids():
    """Records as `scontrol -o show job` of Slurm 22.05 prints them (recorded on the local cluster)."""
    from perflab.fleet.submitter import _task_keys

    assert _task_keys({"JobId": "3", "ArrayJobId": "2", "ArrayTaskId": "0"}) == ["2_0"]
    assert _task_keys({"JobId": "1", "ArrayJobId": "1", "ArrayTaskId": "4294967294"}) == ["1_*"]  # never started
    assert _task_keys({"JobId": "5", "ArrayJobId": "5", "ArrayTaskId": "2-4,7%2"}) == ["5_2", "5_3", "5_4", "5_7"]
    assert _task_keys({"JobId": "9", "ArrayTaskId": "N/A"}) == ["9"]


def test_run_hosts_whose_command_names_differ_are_all_compared(tmp_path):
    """A bundle unpacked per job gives each host its own command path: each is still measured."""
    with open_store(str(tmp_path / "b.db")) as store:
        fleet = state.create(store, "bun", {"study": "run", "slots": ["0", "1"], "log_dir": str(tmp_path),
                                            "job_name": "j", "shards": False})
        for slot in range(2):
            hid = store.add_host({"hostname": f"n{slot}", "cpu_model": "X"}, None)
            cmd = f"/tmp/perflab-bundle-{slot}/run.sh"
            cid = store.start_campaign("run", {}, host_id=hid, labels={"fleet": "bun", "fleet_slot": str(slot)})
            for i in range(4):
                store.add_measurement(cid, _result(100.0 + i), {}, rep=i, label=cmd)
                store.add_measurement(cid, _result(5.0), {}, rep=i, label="other")
            store.finish_campaign(cid, "done", summary={"benchmarks": [{"command": cmd}, {"command": "other"}]})
        rep = build(store, fleet, _NoBatch())
    assert [h["headline"]["n"] for h in rep["hosts"]] == [4, 4]
    assert all(h["headline"]["median"] == pytest.approx(101.5) for h in rep["hosts"])
