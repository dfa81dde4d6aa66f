"""`perflab run --until-decided`: rounds until each comparison is decided at --min-effect (a change
shown, or one ruled out), or the budget ends with the runs that would decide it."""

from __future__ import annotations

import json
import random

import pytest

from perflab.measure.executor import MockExecutor
from perflab.platform.machine import Machine
from perflab.platform.topology import Topology
from perflab.store import open_store
from perflab.studies import run_study
from perflab.studies.run import study as run_mod
from perflab.studies.run.result import RunStudyResult, verdict
from perflab.studies.run.study import Command, RunConfig

MACHINE = Machine(topology=Topology(cpus=(), cores=(), sockets=(), nodes=()), metadata={"hostname": "t"})


def study(config: RunConfig, factors: dict[str, float], sigma: float, seed: int = 1) -> tuple[RunStudyResult, list]:
    rng = random.Random(seed)
    with open_store(":memory:") as store:
        result = run_study(run_mod, config, store, MockExecutor(
            lambda spec: 0.1 * factors.get(spec.label, 1.0) * rng.lognormvariate(0, sigma)), machine=MACHINE)
        runs = [(r.label, r.rep, r.result) for r in _stored(store, result.campaign_id)]
    return result, runs


def _stored(store, campaign_id):
    from perflab.studies.run.result import Run

    return [Run(m.label, m.params, m.rep, m.result) for m in store.measurements(campaign_id)]


def config(*names: str, **kw) -> RunConfig:
    return RunConfig(commands=tuple(Command(n, (n,)) for n in names), until_decided=True, **kw)


def test_a_clear_change_stops_early_and_is_called():
    result, _ = study(config("a", "b"), {"b": 1.10}, 0.02)
    b = result.benchmarks[1]
    assert result.stopped_by == "decided" and result.sequential["decided"]
    assert b.relative["verdict"] == "slower" and b.relative["decision"] == "larger"
    # stopped at a planned look well inside the default budget of 300 runs
    assert b.n == result.sequential["looks"][-1]["runs"] < 300
    assert b.relative["level"] == pytest.approx(result.sequential["looks"][-1]["level"], abs=1e-3)
    assert "slower: b" in verdict(result) and "every comparison decided at look" in verdict(result)


def test_equal_commands_end_in_no_change_of_the_minimum_effect():
    result, _ = study(config("a", "b", min_effect=0.02), {}, 0.02)
    b = result.benchmarks[1]
    assert result.sequential["decided"] and b.relative["decision"] == "within"
    assert b.relative["verdict"] is None
    assert 1 / 1.02 <= b.relative["low"] and b.relative["high"] <= 1.02
    assert "no change of 2 % or more: b (the interval lies inside ±2 %)" in verdict(result)


def test_a_budget_too_small_says_cannot_tell_and_the_runs_that_would_decide():
    result, _ = study(config("a", "b", max_runs=20), {"b": 1.015}, 0.03)
    q = result.sequential
    assert result.stopped_by == "budget" and q["final"] and not q["decided"]
    assert result.benchmarks[1].n == 20
    assert q["needs_runs"] > 20 and q["needs_s"] == pytest.approx(q["needs_runs"] * sum(
        b.summary["median"] for b in result.benchmarks))
    text = verdict(result)
    assert "cannot tell within the budget: b" in text and "not shown to differ" not in text
    assert f"about {q['needs_runs']} runs each would decide it" in text
    # the last look spent what was left: its level is about the fixed test's 95 %
    assert 0.95 < q["looks"][-1]["level"] < 0.97


def test_the_sequential_verdict_survives_a_round_trip_and_reanalysis():
    result, runs = study(config("a", "b"), {"b": 1.10}, 0.02)
    again = RunStudyResult.from_dict(json.loads(json.dumps(result.as_dict())))
    assert again.sequential == result.sequential and verdict(again) == verdict(result)
    from perflab.studies.run.result import Run

    redone = run_mod.analyse(config("a", "b"), [Run(lbl, {}, rep, res) for lbl, rep, res in runs],
                             stopped_by="decided")
    assert redone.sequential == result.sequential


def test_false_alarms_over_all_looks_stay_at_5_percent_on_equal_commands():
    # 40 campaigns of equal commands at 3 % noise: none may be called different more than the
    # binomial allows at 5 % (4 of 40 is already p = 0.14 under 5 %; each look at a nominal 95 %
    # would call about one in five)
    called = 0
    for seed in range(40):
        result, _ = study(config("a", "b", max_runs=60), {}, 0.03, seed=seed)
        called += bool(result.benchmarks[1].relative.get("verdict"))
    assert called <= 4


def test_a_fixed_count_that_shows_nothing_points_to_until_decided():
    cfg = RunConfig(commands=tuple(Command(n, (n,)) for n in ("a", "b")), runs=10)
    result, _ = study(cfg, {"b": 1.003}, 0.03)
    assert result.sequential is None and not result.benchmarks[1].relative["verdict"]
    assert "not shown to differ from it: b" in verdict(result)
    assert "this does not show they are equal: --until-decided runs until it tells" in verdict(result)


def test_harness_rows_find_the_planted_change_and_count_the_runs_used():
    from perflab.checks.run import rates_until_decided

    r = rates_until_decided("quiet", 2, 3)
    assert r["false_positive"] == 0.0 and r["detection"] == 1.0
    assert 10 < r["runs_median"] <= r["runs_p90"] <= 300
