"""Per-event series through perflab run's command line: the warm-up of a slow start, bad options in
one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.studies.test_series import SLOW_START


def perflab(tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run([sys.executable, "-m", "perflab", *args], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300, env=env)


@pytest.fixture
def slow_start(tmp_path):
    path = tmp_path / "slowstart.py"
    path.write_text(SLOW_START)
    return path


def one_line_error(p: subprocess.CompletedProcess, *words: str) -> None:
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("perflab: error:"), p.stderr
    assert all(w in lines[0] for w in words), lines[0]


def test_run_finds_the_warmup_of_a_slow_start(slow_start, tmp_path):
    """Done when: a workload whose first 20 events are 10x slower gets its warm-up placed at
    event 20 (within 2) and a steady rate whose interval holds the true one."""
    res = perflab(tmp_path, "run", "--runs", "3", "--json", "r.json", "--series", r"^event (?P<event>\d+)$",
                  "--", sys.executable, str(slow_start), "200")
    assert res.returncode == 0, res.stderr
    (b,) = json.loads((tmp_path / "r.json").read_text())["result"]["benchmarks"]
    s = b["series"]
    assert s["runs"] == 3  # every run's series, none lost to runs going back to back
    assert all(abs(k - 20) <= 2 for k in s["warmup"]), s["warmup"]
    assert "steady" in res.stdout and "warm-up: the event rate changes" in res.stdout
    # What the rate is depends on the machine (5 ms sleeps plus Python's loop under whatever load):
    # the warm-up is out of it, so it is above the whole run's, and it has an interval around it.
    ci = s["steady_ci"]
    assert s["steady_rate"] > s["run_rate"] and ci["low"] < s["steady_rate"] < ci["high"]


def test_bad_series_options_are_one_line(tmp_path):
    one_line_error(perflab(tmp_path, "run", "--series", "x(?P<q>1)", "--", "true"), "names no event, count or time group")
    one_line_error(perflab(tmp_path, "run", "--skip-events", "3", "--", "true"), "--skip-events cuts a per-event series")
    one_line_error(perflab(tmp_path, "run", "--primary-metric", "steady_rate", "--", "true"), "per-event series")
