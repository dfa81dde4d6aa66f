"""A fleet of score campaigns: each host's score in the farm report, and a host whose score is below
its platform's peers named (the fleet's own slow-node rules, on each repetition's score)."""

from __future__ import annotations

import math
import random

import pytest

from perflab.fleet import state
from perflab.fleet.report import build
from perflab.store import open_store
from perflab.studies.score.analysis import analyse_workloads
from perflab.studies.score.result import ScoreResult, WorkloadScore

from tests.studies.test_fleet_units import _NoBatch


def _score_summary(rng: random.Random, speed: float) -> dict:
    wls = [WorkloadScore(name=f"w{i}", references={"events_per_s": 100.0},
                         values=[{"events_per_s": 100.0 * (1 + i / 10) * speed * rng.lognormvariate(0, 0.01)}
                                 for _ in range(3)]) for i in range(4)]
    return analyse_workloads(ScoreResult(suite="farm", source="measured", scaling=100, reference_machine="ref",
                                         workloads=wls, cores=32)).as_dict()


def _score_task(store, slot: int, host: str, summary: dict) -> None:
    hid = store.add_host({"hostname": host, "cpu_model": "EPYC 7742", "kernel": {"release": "6.1.0"}},
                         {"sockets": [0, 1], "cores": list(range(32))})
    cid = store.start_campaign("score", {"suite": "farm"}, host_id=hid,
                               labels={"fleet": "farm", "fleet_slot": str(slot), "slurm_node": host})
    store.finish_campaign(cid, "done", summary=summary)


def test_fleet_report_gives_each_hosts_score_and_names_a_slow_one(tmp_path):
    rng = random.Random(3)
    with open_store(str(tmp_path / "f.db")) as store:
        fleet = state.create(store, "farm", {"study": "score", "slots": [str(i) for i in range(10)],
                                             "log_dir": str(tmp_path), "job_name": "j", "shards": False})
        for slot in range(10):
            _score_task(store, slot, f"n{slot:02d}", _score_summary(rng, 0.85 if slot == 4 else 1.0))
        rep = build(store, fleet, _NoBatch())
    heads = {h["host"]: h["headline"] for h in rep["hosts"]}
    assert heads["n00"]["quantity"] == "score (farm)" and heads["n00"]["n"] == 3
    assert 110 < heads["n00"]["median"] < 120 and heads["n00"]["ci"]["level"] == 0.95
    assert [s["host"] for s in rep["slow_hosts"]] == ["n04"]


def test_a_quiet_fleet_of_scores_names_no_host(tmp_path):
    rng = random.Random(4)
    with open_store(str(tmp_path / "f.db")) as store:
        fleet = state.create(store, "farm", {"study": "score", "slots": [str(i) for i in range(10)],
                                             "log_dir": str(tmp_path), "job_name": "j", "shards": False})
        for slot in range(10):
            _score_task(store, slot, f"n{slot:02d}", _score_summary(rng, 1.0))
        rep = build(store, fleet, _NoBatch())
    assert rep["slow_hosts"] == []


def test_cost_takes_a_platforms_score_from_a_fleet_of_scores(tmp_path):
    from perflab.studies.cost.study import load_platforms, run_cost

    rng = random.Random(5)
    db = str(tmp_path / "f.db")
    with open_store(db) as store:
        state.create(store, "farm", {"study": "score", "slots": [str(i) for i in range(6)],
                                     "log_dir": str(tmp_path), "job_name": "j", "shards": False})
        for slot in range(6):
            _score_task(store, slot, f"n{slot:02d}", _score_summary(rng, 1.0))
        toml = tmp_path / "p.toml"
        toml.write_text('[requirement]\ntarget_score = 10000\npower_envelope_kw = 100\n\n[[platform]]\n'
                        'name = "EPYC"\nsockets = 2\ntdp_w = 225\nscore_from_fleet = "farm"\n'
                        'prices = { cpu = 5000 }\n')
        result = run_cost(load_platforms(str(toml)), store)
    p = result.platforms[0]
    assert 110 < p.throughput_per_node < 120 and p.throughput_source.startswith("fleet farm: median of 6 hosts")
    assert p.nodes == math.ceil(10000 / p.throughput_per_node) and p.total_power_kw == pytest.approx(p.nodes * 1.6 * 225 * 2 / 1000)
