"""perflab compare with replicate campaigns a side: drift between campaigns measured,
so a level shift of the machine alone is no difference, and a real change still is."""

from __future__ import annotations

import random

import pytest

from perflab.model import RunResult
from perflab.store import open_store
from perflab.studies.compare.study import CompareConfig, run_compare


def _campaign(store, level: float, rng: random.Random, runs: int = 10, label: str = "work") -> int:
    """A `run` campaign of one command at ``level`` seconds, 1 % run-to-run noise."""
    cid = store.start_campaign("run", {"commands": [{"name": label}]})
    for rep in range(runs):
        wall = level * rng.lognormvariate(0, 0.01)
        store.add_measurement(cid, RunResult(wall_ns=int(wall * 1e9), user_s=0.9 * wall, sys_s=0.0,
                                             maxrss_kb=2048, minflt=0, majflt=0, nvcsw=0, nivcsw=0,
                                             exit_code=0), {}, rep=rep, label=label)
    store.finish_campaign(cid, "done")
    return cid


@pytest.fixture
def store(tmp_path):
    s = open_store(str(tmp_path / "perflab.db"))
    yield s
    s.close()


def _levels(store, rng, levels, label="work"):
    return [_campaign(store, lv, rng, label=label) for lv in levels]


def test_a_shift_between_campaigns_is_a_difference_to_one_campaign_and_none_to_three(store):
    rng = random.Random(3)
    # The same code on six days; the machine's level moves by a few per cent from day to day.
    a = _levels(store, rng, [0.100, 0.104, 0.097])
    b = _levels(store, rng, [0.103, 0.099, 0.105])
    single = run_compare(CompareConfig(a[1], b[1]), store)
    assert single.headline is not None and "drift between campaigns" in single.verdict
    rep = run_compare(CompareConfig(a[0], b[0], more_a=tuple(a[1:]), more_b=tuple(b[1:])), store)
    wall = next(r for r in rep.rows if r.measure == "wall_s")
    assert not wall.significant and wall.n_a == wall.n_b == 3
    assert wall.lo < 1.0 < wall.hi and wall.level == pytest.approx(0.95)
    assert "no significant difference" in rep.verdict and "campaigns 1,2,3 and 4,5,6" in rep.verdict
    assert "drift between campaigns" not in rep.verdict  # measured, not warned about
    assert any("Kalibera" in n for n in rep.notes) and any("80 % power" in n for n in rep.notes)
    d = rep.as_dict()
    assert d["campaigns_a"] == a and d["campaigns_b"] == b
    assert d["rows"][0]["detectable"] == pytest.approx(wall.detectable) and wall.detectable > 0


def test_a_change_larger_than_the_drift_is_found(store):
    rng = random.Random(4)
    a = _levels(store, rng, [0.100, 0.102, 0.099])
    # B's command line differs (another build's path): one command a side is still the point.
    b = _levels(store, rng, [0.120, 0.123, 0.121], label="./new/work")
    rep = run_compare(CompareConfig(a[0], b[0], more_a=tuple(a[1:]), more_b=tuple(b[1:])), store)
    wall = next(r for r in rep.rows if r.measure == "wall_s")
    assert wall.significant and wall.better == "A" and 1.1 < wall.lo < wall.ratio < wall.hi < 1.35
    assert rep.headline is wall and "A better" in rep.verdict
    assert any("matched the only command" in n for n in rep.notes)


def test_harness_shift_model_stays_quiet_with_replicates():
    from perflab.checks.compare import replicated_rates
    from perflab.checks.noise import MODELS

    fp, det = replicated_rates(MODELS["shift"], runs=5, planted=0.30)
    assert fp == 0.0 and det >= 4 / 5


def test_bad_sides_are_refused_in_one_line(store):
    from perflab.errors import PerflabError

    ids = _levels(store, random.Random(6), [0.1] * 4)
    for a, b, words in (((ids[0], ids[1]), (ids[1], ids[2]), "on both sides"),
                        ((ids[0], ids[0]), (ids[2], ids[3]), "given twice")):
        with pytest.raises(PerflabError, match=words):
            run_compare(CompareConfig(a[0], b[0], more_a=a[1:], more_b=b[1:]), store)
