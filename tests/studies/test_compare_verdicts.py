"""perflab compare's verdicts: zero medians, the declared direction, the minimum effect, drift
between campaigns, two speeds, intervals at their real level and a headline that matters
(through the command line: tests/cli/test_compare_verdicts.py)."""

from __future__ import annotations

import random

import pytest

from perflab.model import RunResult
from perflab.store import open_store
from perflab.studies.compare.study import CompareConfig, run_compare


@pytest.fixture
def store(tmp_path):
    s = open_store(str(tmp_path / "perflab.db"))
    yield s
    s.close()


def _result(wall: float, user: float | None = None, rss: int = 2048, **metrics: float) -> RunResult:
    return RunResult(wall_ns=int(wall * 1e9), user_s=0.9 * wall if user is None else user, sys_s=0.0,
                     maxrss_kb=rss, minflt=0, majflt=0, nvcsw=0, nivcsw=0, exit_code=0,
                     metrics=dict(metrics))


def _run_campaign(store, walls, config=None, label="work", **kw) -> int:
    """A `run` campaign of one command whose runs took ``walls`` seconds."""
    cid = store.start_campaign("run", config or {"commands": [{"name": label}]})
    for rep, w in enumerate(walls):
        store.add_measurement(cid, _result(w, **{k: v(rep) if callable(v) else v for k, v in kw.items()}),
                              {}, rep=rep, label=label)
    store.finish_campaign(cid, "done")
    return cid


# ---- a zero median -----------------------------------------------------------

def test_stratified_ratio_with_zeros_is_no_crash():
    from perflab.stats.stratified import pooled_ratio, stratified_ratio_ci

    # user time of `sleep`: 0 in some runs, so a bootstrap resample can have a zero median
    strata = [([0.0, 0.001, 0.0, 0.001], [0.001, 0.0, 0.001, 0.0]), ([0.002, 0.003], [0.003, 0.002])]
    ratio, lo, hi = pooled_ratio(strata)
    assert lo <= ratio <= hi and ratio == pytest.approx(1.0)  # from the stratum without zeros
    ratio, lo, hi, level = stratified_ratio_ci(strata)
    assert lo <= ratio <= hi and ratio == pytest.approx(1.0) and level == pytest.approx(2 / 3)
    assert stratified_ratio_ci(strata[:1])[3] == 0.0  # every stratum has a zero: no interval


def test_instances_campaigns_with_zero_user_time_compare_with_a_note(store):
    def campaign(wall: float) -> int:
        cid = store.start_campaign("instances", {})
        for rep in range(5):
            for n in (1, 2):
                for copy in range(n):
                    # user time 0 in every other round: the median of a point can be 0
                    store.add_measurement(cid, _result(wall, user=0.0 if rep % 2 else 0.001),
                                          {"policy": "none", "n": n, "copy": copy}, rep=rep, label="sleep")
        store.finish_campaign(cid, "done")
        return cid

    res = run_compare(CompareConfig(campaign(0.05), campaign(0.1)), store)
    assert not any(r.measure == "user_s" for r in res.rows)
    assert any("user time [s] left out" in n and "of 0" in n for n in res.notes)
    wall = next(r for r in res.rows if r.measure == "wall_s" and r.overall)
    assert wall.significant and wall.better == "A" and wall.ratio == pytest.approx(2.0, rel=0.01)


# ---- the declared direction, with a real command ------------------------------


def test_no_direction_is_guessed_from_a_name(store):
    # 'fps' is no '_per_s', 'events_per_s' is; neither is declared here, so neither is judged
    a = _run_campaign(store, [0.1] * 6, fps=100.0, events_per_s=100.0)
    b = _run_campaign(store, [0.1] * 6, fps=150.0, events_per_s=150.0)
    res = run_compare(CompareConfig(a, b), store)
    for m in ("metric:fps", "metric:events_per_s"):
        row = next(r for r in res.rows if r.measure == m)
        assert row.significant and row.better == "" and row.verdict_cell == "B higher"


# ---- the minimum effect -------------------------------------------------------------------------

def test_min_effect_band_must_be_excluded(store):
    rng = random.Random(3)
    a = _run_campaign(store, [0.1 * rng.lognormvariate(0, 0.0005) for _ in range(12)])
    b = _run_campaign(store, [0.1005 * rng.lognormvariate(0, 0.0005) for _ in range(12)])
    tiny = run_compare(CompareConfig(a, b, min_effect=0.0), store)
    wall = next(r for r in tiny.rows if r.measure == "wall_s")
    assert wall.significant and 1.0 < wall.lo and wall.hi < 1.01  # real, but under 1 %
    default = run_compare(CompareConfig(a, b), store)
    assert default.min_effect == 0.01 and not any(r.significant for r in default.rows)
    assert "by more than 1 %" in default.verdict
    d = default.as_dict()
    assert d["min_effect"] == 0.01 and all(r["min_effect"] == 0.01 for r in d["rows"])


# ---- drift between campaigns: the harness and the verdict ---------------------------------------

def test_harness_quiet_model_is_quiet_and_finds_the_planted_change():
    from perflab.checks.compare import rates
    from perflab.checks.noise import MODELS

    fp, det = rates(MODELS["quiet"], runs=6)
    assert fp == 0.0 and det >= 5 / 6


def test_a_level_shift_alone_is_called_a_difference_and_the_verdict_says_why(store):
    # the 'shift' model's case: identical code, B's campaign 3 % slower (another day)
    rng = random.Random(5)
    a = _run_campaign(store, [0.1 * rng.lognormvariate(0, 0.01) for _ in range(10)])
    b = _run_campaign(store, [0.103 * rng.lognormvariate(0, 0.01) for _ in range(10)])
    res = run_compare(CompareConfig(a, b), store)
    assert res.headline is not None
    assert "one campaign a side: a difference may be drift between campaigns; replicate" in res.verdict


def test_harness_prints_one_line_per_noise_model(monkeypatch):
    from perflab.checks import compare as compare_check
    from perflab.checks.noise import STUDY_MODELS

    monkeypatch.setattr(compare_check, "rates", lambda model, runs, seed=0: (0.0, 1.0))
    monkeypatch.setattr(compare_check, "replicated_rates", lambda model, runs, seed=0: (0.0, 1.0))
    lines = compare_check.verdict_check(runs=3)
    assert [ln.split()[1] for ln in lines] == [f"compare-{m}" for m in STUDY_MODELS] + [
        "compare-replicated-shift", "compare-replicated-vcpu-states", "compare-replicated-loaded"]


# ---- two speeds ---------------------------------------------------------------------------------

def test_two_speeds_are_named_in_the_row_and_the_verdict(store):
    rng = random.Random(7)
    a = _run_campaign(store, [0.1 * rng.lognormvariate(0, 0.01) for _ in range(20)])
    # B: the same speed in 12 runs, 1.48x slower in 8 (a co-tenant on the host)
    b = _run_campaign(store, [0.1 * (1.48 if i % 5 in (1, 3) else 1.0) * rng.lognormvariate(0, 0.01)
                              for i in range(20)])
    res = run_compare(CompareConfig(a, b), store)
    wall = next(r for r in res.rows if r.measure == "wall_s")
    assert wall.modes_a is None and wall.modes_b is not None and len(wall.modes_b.modes) == 2
    assert wall.modes_b.modes[1].share == pytest.approx(0.4)
    assert "2 speeds" in wall.verdict_cell and "two speeds" in res.verdict
    assert "B: 2 modes" in res.verdict
    assert res.as_dict()["rows"][0]["modes_b"]["multimodal"] is True
    # A ran at the fast speed only: compared with B's runs at that speed, not with B's mixture
    assert "compared within the fast speed only (80% of runs)" in res.verdict
    assert wall.speeds is not None and [len(s.b) for s in wall.speeds.speeds] == [12, 8]
    assert not wall.significant and res.as_dict()["rows"][0]["speeds"]["line"] == wall.speeds.line()


# ---- intervals at their real level, the footnote, the headline ----------------------------------


def test_headline_is_the_primary_measure_not_a_trivial_change(store):
    # max RSS moves by 0.02 % (significant with no minimum effect); wall time does not move
    rng = random.Random(11)
    a = _run_campaign(store, [0.1 * rng.lognormvariate(0, 0.02) for _ in range(10)], rss=41500)
    b = _run_campaign(store, [0.1 * rng.lognormvariate(0, 0.02) for _ in range(10)], rss=41508)
    res = run_compare(CompareConfig(a, b, min_effect=0.0), store)
    assert any(r.significant and r.measure == "maxrss_kb" for r in res.rows)
    assert res.headline is None and res.verdict.startswith("no significant change in wall time")
    assert "+0.0 %" not in res.verdict.split(";")[0]
