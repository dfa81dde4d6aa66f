"""Per-event series through the real spawn server: lines stamped as they arrive."""

from __future__ import annotations

import sys

import pytest

from perflab.measure.real import RealExecutor
from perflab.measure.series import compile_series
from perflab.model import RunSpec
from perflab.model.series import decode
from tests.studies.test_series import SLOW_START


@pytest.fixture
def slow_start(tmp_path):
    path = tmp_path / "slowstart.py"
    path.write_text(SLOW_START)
    return path


def test_spawn_server_stamps_lines_as_they_arrive(slow_start):
    pats = compile_series([r"^event (?P<event>\d+)$"])
    with RealExecutor() as ex:
        r = ex.run(RunSpec(argv=(sys.executable, str(slow_start), "60"), series=pats))
    s = decode(r.series)
    assert r.ok and s.ids == list(range(60))
    # each line was stamped when it was read, so never before the program could have printed it
    # (its sleeps so far, from the spawn), and in the order printed: a lower bound, whatever the load
    slept = [sum(0.05 if j < 20 else 0.005 for j in range(i + 1)) * 1e9 for i in range(60)]
    assert all(a >= t for a, t in zip(s.at_ns, slept)) and s.at_ns == sorted(s.at_ns)
    assert r.metrics["warmup_events"] >= 0 and r.metrics["steady_rate"] > 0
