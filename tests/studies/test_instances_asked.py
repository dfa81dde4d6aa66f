"""The rounds an instances scan at two speeds asks for (studies/instances/power.py), said alike in
the answer, the terminal and the JSON; none asked at one speed; the harness's user who reruns."""

from __future__ import annotations

import json
import math

import pytest
from rich.console import Console

from perflab.checks.instances import one_node_box, rates_asked
from perflab.measure.executor import MockExecutor
from perflab.model import Workload
from perflab.platform.machine import Machine
from perflab.report.answers import basis
from perflab.report.terminal.instances import render
from perflab.store import open_store
from perflab.studies import run_study
from perflab.studies.instances import power
from perflab.studies.instances import study as instances
from perflab.studies.instances.result import ForkRow, fork_verdict
from perflab.studies.instances.study import InstancesConfig, InstancesResult


@pytest.fixture
def store(tmp_path):
    with open_store(str(tmp_path / "perflab.db")) as s:
        yield s


def _box(ncpu: int) -> Machine:
    return Machine(topology=one_node_box(ncpu), metadata={"hostname": "mock"})


def _jitter(rnd: int, n: int) -> float:
    """-2 %..+2 % by round and N: runs at one speed are never equal."""
    return 1 + 0.01 * ((rnd * 7 + n * 3) % 5 - 2)


def machine(two_speeds: bool, wait: float = 0.0):
    """N copies take max(1, N (1 - wait) / 2) s, times the jitter; at two speeds 2 of every point's
    5 rounds (which two moves with N) run 1.48x slower, as on a guest that shares its host's cores."""
    def model(spec):
        n, rnd = spec.params["n"], spec.params["round"]
        slow = two_speeds and (rnd + n) % 5 in (0, 2)
        return max(1.0, n * (1 - wait) / 2) * _jitter(rnd, n) * (1.48 if slow else 1.0)
    return model


def _run(store, two_speeds: bool, wait: float = 0.0):
    cfg = InstancesConfig(Workload("mock", ("work",)), ns=(1, 2, 3, 4), policies=("none",), reps=5)
    return run_study(instances, cfg, store, MockExecutor(machine(two_speeds, wait)), machine=_box(2))


def test_two_speeds_without_a_gain_found_ask_for_rounds_alike_everywhere(store, tmp_path):
    res = _run(store, two_speeds=True)
    assert res.optimum_n is not None and res.optimum_n <= 2
    assert res.rounds_needed is not None and res.rounds_needed > 5
    ask = f"about {res.rounds_needed} rounds (--reps {res.rounds_needed}) would see a gain of 5% past the CPU count"
    assert ask in res.verdict() and "two speeds about 1.4" in res.verdict()
    con = Console(record=True, width=100)
    render(res, con, "mock")
    text = " ".join(con.export_text().split())
    assert f"answer: {res.verdict()}" in text
    data = json.loads(json.dumps(res.as_dict()))
    assert data["verdict"] == res.verdict() and data["rounds_needed"] == res.rounds_needed
    again = InstancesResult.from_dict(data)
    assert (again.verdict(), again.rounds_needed) == (res.verdict(), res.rounds_needed)
    assert basis("instances", again) == ("5 rounds per point, 4 points, 94% CI", True)  # the report: thin


def test_one_speed_asks_nothing(store):
    res = _run(store, two_speeds=False)
    assert (res.rounds_needed, res.asked) == (None, "")
    assert "--reps" not in res.verdict()
    assert basis("instances", InstancesResult.from_dict(res.as_dict()))[1] is False


def test_a_gain_two_speeds_hide_is_asked_for_and_found_at_the_rounds_asked(store):
    # N = 3 gains 20 %, but rounds 1 and 3 of every 5 run 1.48x slower: N = 3's slow rounds lie
    # below N = 2's fast ones, and 5 rounds against 5 of mixtures cannot tell (U = 19 of 25)
    def model(spec):
        n, rnd = spec.params["n"], spec.params["round"]
        return max(1.0, n * (5 / 6) / 2) * _jitter(rnd, n) * (1.48 if rnd % 5 in (1, 3) else 1.0)

    def run(reps):
        cfg = InstancesConfig(Workload("mock", ("work",)), ns=(1, 2, 3, 4), policies=("none",), reps=reps)
        return run_study(instances, cfg, store, MockExecutor(model), machine=_box(2))

    first = run(5)
    assert first.optimum_n == 2 and first.rounds_needed is not None
    again = run(first.rounds_needed)
    assert again.optimum_n == 3 and again.rounds_needed is None
    assert "--reps" not in again.verdict()
    (scan,) = again.scans
    n3 = next(s for s in scan.steps if s.kind == "past" and s.n == 3)
    assert n3.significant and n3.ratio == pytest.approx(1.2, abs=0.03)


def test_the_rounds_asked_for():
    seen = power.Seen(share=0.4, spread=0.03, gap=math.log(1.48))
    # P(Bin(r, 0.4) < 3) <= 0.1 first at r = 12 (r = 11: 0.119); the power part asks for 7
    assert power.rounds_needed(seen, past=2, alpha=0.05) == 12
    assert power._below(11, 0.4, 3) == pytest.approx(0.1189, abs=1e-4)
    # a wide spread within a speed: 2 ((1.960 + 0.842) 0.1 / log 1.05)^2 / (3 / pi) = 69.05: 70 rounds
    assert power.rounds_needed(power.Seen(0.4, 0.1, 0.39), past=2, alpha=0.05) == 70
    # a rare speed: 3 runs of it at 90 % takes more rounds
    assert power.rounds_needed(power.Seen(0.12, 0.03, 0.39), past=2, alpha=0.05) > 40


def test_two_speeds_seen_in_the_distances_from_each_points_median():
    quiet = [[2.0 * _jitter(r, n) for r in range(5)] for n in range(1, 9)]
    assert power.two_speeds(quiet) is None
    two = [[2.0 * _jitter(r, n) * (1.48 if (r + n) % 5 in (0, 2) else 1) for r in range(5)] for n in range(1, 9)]
    seen = power.two_speeds(two)
    assert seen is not None
    assert seen.share == pytest.approx(0.4, abs=0.02) and math.exp(seen.gap) == pytest.approx(1.48, abs=0.04)
    assert 0.005 < seen.spread < 0.03
    assert power.two_speeds([[1.0, 1.5]] * 3) is None  # too few runs to say


def test_harness_user_who_reruns_with_the_rounds_asked():
    fp, det, mid = rates_asked("two-speed", runs=6, seed=5)
    assert fp <= 1 / 6 and det >= 4 / 6 and mid >= 10


def _rows(across: bool, gain: float = 1.0):
    """8 N x 5 paired ratios NUMA / no NUMA about ``gain`` (-8 %..+8 %); with ``across``, 2 pairs
    in 5 whose two runs fell at different speeds, 1.48x apart (one each way)."""
    rows = []
    for n in range(8):
        ratios = []
        for rnd in range(5):
            r = gain * (1 + 4 * (_jitter(rnd, n) - 1))
            if across and rnd == (n % 5):
                r *= 1.48
            elif across and rnd == ((n + 2) % 5):
                r /= 1.48
            ratios.append(r)
        rows.append(ForkRow(n + 1, 1.0, 1.0, None, None, ratios))
    return rows


def test_fork_pairs_across_two_speeds_ask_for_rounds_alike_in_text_and_json():
    v = fork_verdict(_rows(across=True))
    assert not v.significant and v.rounds_needed is not None and v.rounds_needed > 5
    assert f"about {v.rounds_needed} rounds (--reps {v.rounds_needed}) would see 5%" in v.text
    assert "40% of pairs across them" in v.text
    d = json.loads(json.dumps(v.as_dict()))
    assert d["rounds_needed"] == v.rounds_needed and d["text"] == v.text
    res = InstancesResult("events/s", [1], [], None, None, None, fork=_rows(across=True), fork_verdict=v)
    con = Console(record=True, width=400)
    render(res, con, "mock")
    assert f"verdict: {v.text}" in con.export_text()


def test_fork_pairs_at_one_speed_ask_nothing():
    v = fork_verdict(_rows(across=False))
    assert not v.significant and v.rounds_needed is None and "--reps" not in v.text
    assert fork_verdict(_rows(across=False, gain=1.05)).significant
    assert power.fork_rounds([1.0, 1.5, 0.9], 1, 0.05) is None  # too few pairs to say
