"""The time-blocked slow-node judgement (perflab.stats.time_blocks) on synthetic runs with times."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perflab.stats.peers import slow_members
from perflab.stats.time_blocks import TimedRuns, judge_group, slow_by_time


def _host(rng, start, end, speed=1.0, period=0.5, noise=0.05, load=None, extra=None):
    """Runs back to back from start to end; value = speed x the machine's load factor at that
    moment x log-normal noise; ``extra(t)`` multiplies this host's value alone."""
    starts = np.arange(start, end, period)
    ends = starts + period * 0.9
    mid = (starts + ends) / 2
    v = speed * np.exp(rng.normal(0.0, noise, starts.size))
    if load is not None:
        v = v * load(mid)
    if extra is not None:
        v = v * extra(mid)
    return TimedRuns(starts.tolist(), ends.tolist(), v.tolist())


def _load(t):
    # The machine's load moves for every host alike: a busy stretch at 10-14 s, a slow drift.
    return np.where((t > 10) & (t < 14), 0.6, 1.0) * (1.0 - 0.01 * t)


def _slow(tests):
    return sorted(t.member for t in tests if t.slow)


def test_planted_slow_host_found_alone():
    rng = np.random.default_rng(1)
    g = {f"node{i}": _host(rng, 0.2 * i, 30, speed=0.7 if i == 2 else 1.0, load=_load) for i in range(1, 5)}
    tests, times = slow_by_time({"A": g})
    assert _slow(tests) == ["node2"]
    assert times["A"].mode == "together" and len(times["A"].blocks) >= 3
    t = next(t for t in tests if t.member == "node2")
    assert 0.65 < t.ratio < 0.75 and t.high < 1 and t.blocks_below == len(t.block_ratios)


def test_null_quiet_and_busy_in_one_block_not_slow():
    rng = np.random.default_rng(2)
    false = 0
    for _ in range(40):
        g = {f"node{i}": _host(rng, rng.uniform(0, 1), 30 + rng.uniform(0, 1), load=_load) for i in range(1, 5)}
        tests, _ = slow_by_time({"A": g})
        false += bool(_slow(tests))
    assert false <= 3
    # node3 at half speed during its first 6 s only (a moment of load on that node): not slow.
    rng = np.random.default_rng(3)
    busy = {f"node{i}": _host(rng, 0, 30, load=_load,
                              extra=(lambda t: np.where(t < 6, 0.5, 1.0)) if i == 3 else None) for i in range(1, 5)}
    tests, times = slow_by_time({"A": busy})
    assert _slow(tests) == []
    t = next(t for t in tests if t.member == "node3")
    assert t.block_ratios[0] < 0.7 and t.blocks_below < len(t.block_ratios)


def test_tail_runs_alone_not_counted():
    rng = np.random.default_rng(4)
    g = {f"node{i}": _host(rng, 0, 20) for i in range(1, 5)}
    # node4 runs on for 40 s after its peers end, on a machine then busy with other work: every
    # one of those runs at 0.4. Whole campaigns name it; on the common window it is a twin.
    late = _host(rng, 20, 60, speed=0.4)
    g["node4"] = TimedRuns([*g["node4"].starts, *late.starts], [*g["node4"].ends, *late.ends],
                           [*g["node4"].values, *late.values])
    assert _slow(slow_members({"A": {k: r.values for k, r in g.items()}})) == ["node4"]
    tests, times = slow_by_time({"A": g})
    assert _slow(tests) == []
    t = next(t for t in tests if t.member == "node4")
    assert t.outside >= len(late.values) - 1 and 0.9 < t.ratio < 1.1
    assert times["A"].window[1] <= 20.0


def test_apart_names_the_cost_and_finds_only_a_large_gap():
    rng = np.random.default_rng(5)
    # One node at a time, each in its own 10 s: windows that never meet, each with its own level.
    shift = {1: 1.0, 2: 0.4, 3: 1.03, 4: 0.97}
    g = {f"node{i}": _host(rng, 12 * i, 12 * i + 10, speed=shift[i]) for i in range(1, 5)}
    tests, times = slow_by_time({"A": g})
    assert times["A"].mode == "apart" and "do not all overlap" in times["A"].why
    assert 0 < times["A"].detectable < 1
    assert _slow(tests) == ["node2"]
    # The same gap of 30 % among peers whose windows differ by 20 %: not named.
    shift = {1: 1.0, 2: 0.7, 3: 1.2, 4: 0.85}
    g = {f"node{i}": _host(rng, 12 * i, 12 * i + 10, speed=shift[i]) for i in range(1, 5)}
    tests, times = slow_by_time({"A": g})
    assert _slow(tests) == [] and times["A"].detectable > 0.3


def test_too_few_members_or_runs():
    rng = np.random.default_rng(6)
    res, gt = judge_group({"a": _host(rng, 0, 10), "b": _host(rng, 0, 10)})
    assert res == {} and gt.mode == "untested"
    # Overlap of 1 s: too short for 2 blocks of 3 runs each; judged as if apart, and said so.
    g = {f"n{i}": _host(rng, 9.0 * (i > 1) + 0.01 * i, 10 + 9.0 * (i > 1)) for i in range(1, 5)}
    _, gt = judge_group(g)
    assert gt.mode == "apart" and "too few for 2 time blocks" in gt.why
    with pytest.raises(ValueError):
        slow_by_time({}, alpha=0)
    assert math.isfinite(judge_group({f"n{i}": _host(rng, 0, 10) for i in range(3)})[0]["n0"][0])
