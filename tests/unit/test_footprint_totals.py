"""footprint's table: sizes by top directory add up to the printed total; a tracing-overhead
interval from fewer than 3 runs each is not printed with a level it does not have."""

from __future__ import annotations

import io

from rich.console import Console

from perflab.report.terminal.footprint import render, sizes_that_add_up
from perflab.studies.footprint.study import FootprintResult, TopDir

MiB = 2**20


def test_parts_add_up_to_the_total_by_largest_remainder():
    parts = [int(26.04 * MiB), int(5.24 * MiB), 42 * 1024 + 410]
    assert sizes_that_add_up(parts, sum(parts)) == ["26.0 MiB", "5.2 MiB", "0.1 MiB", "31.3 MiB"]
    assert sizes_that_add_up([1500, 600], 2100) == ["1.5 KiB", "0.6 KiB", "2.1 KiB"]
    assert sizes_that_add_up([10, 20], 30) == ["10 B", "20 B", "30 B"]


def test_every_split_adds_up():
    import random

    rng = random.Random(7)
    for _ in range(500):
        parts = [rng.randrange(1, 50 * MiB) for _ in range(rng.randrange(1, 6))]
        shown = sizes_that_add_up(parts, sum(parts))
        nums = [float(s.split()[0]) for s in shown]
        assert round(sum(nums[:-1]), 1) == nums[-1], shown


def _text(runs: int, ci, level) -> str:
    r = FootprintResult(workload="w", argv=("w",), cwd="/", cpu=1, seccomp=False, files=[], failed=[],
                        by_top=[TopDir("/usr", 2, 3 * MiB)], total_files=2, total_bytes=3 * MiB,
                        traced_wall_s=[0.2] * runs, untraced_wall_s=[0.1] * runs, overhead=2.0,
                        overhead_ci=ci, overhead_ci_level=level)
    c = Console(file=io.StringIO(), width=200, record=True, color_system=None)
    render(r, c)
    return c.export_text()


def test_two_runs_give_no_interval_and_say_why():
    text = _text(2, None, None)
    assert "no CI: 3 runs each needed" in text and "95%" not in text


def test_three_runs_give_the_interval_with_its_level():
    assert "2.00x wall time (95% CI 1.90-2.10;" in _text(3, (1.9, 2.1), 0.95)
