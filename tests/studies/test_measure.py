"""The deterministic MockExecutor: exact times, a model of the workload, played output."""

from __future__ import annotations

import pytest

from perflab.measure.executor import MockExecutor
from perflab.model import RunSpec


def test_mock_sleep_is_exact():
    m = MockExecutor()
    r = m.run(RunSpec(argv=("sleep", "0.123")))
    assert r.wall_ns == 123_000_000 and r.user_s == pytest.approx(0.9 * 0.123)
    assert r.start_ns == 0 and r.end_ns == 123_000_000 and m.now_ns() == 123_000_000
    assert m.run(RunSpec(argv=("sleep 0.5",), shell=True)).wall_ns == 500_000_000
    assert m.run(RunSpec(argv=("false",))).exit_code == 1
    assert len(m.calls) == 3


def test_mock_model():
    m = MockExecutor(model=lambda spec: float(spec.params["n"]) / 10)
    r = m.run(RunSpec(argv=("x",), params={"n": 3}))
    assert r.wall_ns == 300_000_000
    c = m.run_concurrent([RunSpec(argv=("x",), params={"n": k}) for k in (1, 2)])
    assert [x.wall_ns for x in c.results] == [100_000_000, 200_000_000] and c.start_spread_ns == 0


def test_mock_capture_plays_output():
    ex = MockExecutor(output=lambda spec: "event 3\n")
    res, text = ex.capture(RunSpec(argv=("sleep", "0.5")))
    assert res.wall_ns == 500_000_000 and text == "event 3\n"
