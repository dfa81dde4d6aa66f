"""perflab compare of two --instrument cachegrind campaigns: instructions, misses and estimated
cycles with ratios and intervals, judged as the gate judges counts (judge.counted_test), so
2 runs a side tell a 0.5 % change; times keep their rank test and their --min-effect band.

Stored campaigns check the statistics exactly; real simulated runs of two builds of a tiny C
program check the whole path (about 1 s per run here).
"""

from __future__ import annotations

import json
import shutil

import pytest

from perflab.model import RunResult
from perflab.store import open_store
from perflab.studies.compare.study import CompareConfig, run_compare
from tests.real.test_cachegrind import PROGRAM, _build, needs_valgrind, perflab


@pytest.fixture
def store(tmp_path):
    s = open_store(str(tmp_path / "perflab.db"))
    yield s
    s.close()


def _campaign(store, walls: list[float], counts: list[dict[str, float]], config: dict) -> int:
    cid = store.start_campaign("run", config)
    for rep, (wall, c) in enumerate(zip(walls, counts)):
        store.add_measurement(cid, RunResult(wall_ns=int(wall * 1e9), user_s=wall, sys_s=0.0,
                                             maxrss_kb=2048, minflt=1, majflt=0, nvcsw=1, nivcsw=0,
                                             exit_code=0, metrics=dict(c)), {}, rep=rep, label="./prog")
    store.finish_campaign(cid, "done")
    return cid


SIMULATED = {"instrument": "cachegrind"}


def test_a_half_percent_count_change_is_found_with_two_runs_a_side(store):
    ir = 1_000_000.0
    a = _campaign(store, [0.50, 0.52], [{"instructions": ir, "i1_misses": 900.0}] * 2, SIMULATED)
    # B: +0.5 % instructions, 6e-7 apart run to run (as minihlt's moved); misses unchanged.
    b = _campaign(store, [0.51, 0.49], [{"instructions": 1.005 * ir, "i1_misses": 900.0},
                                        {"instructions": 1.005 * ir + 0.6, "i1_misses": 900.0}], SIMULATED)
    res = run_compare(CompareConfig(a, b), store)
    rows = {r.measure: r for r in res.rows}
    ins, i1, wall = rows["metric:instructions"], rows["metric:i1_misses"], rows["wall_s"]
    assert ins.counted and ins.significant and ins.better == "A" and ins.level == 0.95
    assert 1.0049 < ins.lo < ins.ratio < ins.hi < 1.0051 and ins.min_effect == 0.0
    assert i1.counted and i1.untested and i1.verdict_cell == "same (equal counts)" and i1.p_adjusted == 1.0
    assert not wall.counted and wall.level < 0.7 and not wall.significant  # ranks at 2 runs: 67 %
    assert res.primary == "metric:instructions" and res.headline is ins
    assert "instructions of ./prog is +0.5 % in B" in res.verdict and "counts by any amount" in res.verdict
    assert any(n.startswith("counted, not timed: instructions, i1_misses") for n in res.notes)
    d = res.as_dict()
    row = next(r for r in d["rows"] if r["measure"] == "metric:instructions")
    assert row["counted"] and row["tested"] and row["verdict"] == "A better"
    # the HTML page prints the equal constant counts' interval as exact, not as a 100 % one
    from perflab.report.html.compare import compare_html

    camps = [store.campaign(a), store.campaign(b)]
    page = compare_html(res, camps, ["vm", "vm"])
    assert "(exact)" in page and "(100%)" not in page and "(95%)" in page
    assert not next(r for r in d["rows"] if r["measure"] == "metric:i1_misses")["tested"]


def test_a_given_min_effect_applies_to_counts_and_times_keep_ranks(store):
    a = _campaign(store, [0.50, 0.52], [{"instructions": 1e6}] * 2, SIMULATED)
    b = _campaign(store, [0.51, 0.49], [{"instructions": 1.005e6}] * 2, SIMULATED)
    res = run_compare(CompareConfig(a, b, counted_min_effect=0.01), store)
    ins = next(r for r in res.rows if r.measure == "metric:instructions")
    assert ins.p_adjusted == 0.0 and ins.level == 1.0 and not ins.significant  # inside +-1 %
    assert ins.ci_text == "[1.0050, 1.0050] exact"


def test_a_count_that_varies_is_ranked_like_a_time(store):
    # 1e-3 apart run to run (a program that reads the clock): not a count, Mann-Whitney at 67 %.
    a = _campaign(store, [0.5, 0.5], [{"instructions": 1e6}, {"instructions": 1.001e6}], SIMULATED)
    b = _campaign(store, [0.5, 0.5], [{"instructions": 1.005e6}, {"instructions": 1.006e6}], SIMULATED)
    ins = next(r for r in run_compare(CompareConfig(a, b), store).rows if r.measure == "metric:instructions")
    assert not ins.counted and not ins.significant and ins.level < 0.7


def test_a_user_metric_constant_on_both_sides_is_still_skipped(store):
    a = _campaign(store, [0.5, 0.52], [{"events": 100.0}] * 2, {})
    b = _campaign(store, [0.5, 0.52], [{"events": 100.0}] * 2, {})
    assert not any(r.measure == "metric:events" for r in run_compare(CompareConfig(a, b), store).rows)


@needs_valgrind
def test_compare_of_two_real_builds_tells_half_a_percent_with_two_runs(tmp_path):
    # N=201100 runs 0.5 % more instructions than N=200000 (8,800 of 1.70 million).
    builds = {"base": _build(tmp_path, "base", PROGRAM, 200000),
              "plus": _build(tmp_path, "plus", PROGRAM, 201100)}
    prog = tmp_path / "prog"

    def campaign(name: str) -> None:
        shutil.copy(builds[name], prog)
        p = perflab("run", "--instrument", "cachegrind", "--runs", "2", "--", "./prog", cwd=tmp_path)
        assert p.returncode == 0, p.stderr

    for name in ("base", "base", "plus"):
        campaign(name)
    same = perflab("compare", "1", "2", "--json", "-", cwd=tmp_path)
    assert same.returncode == 0, same.stderr
    rows = {r["measure"]: r for r in json.loads(same.stdout)["result"]["rows"]}
    for m in ("instructions", "estimated_cycles", "i1_misses", "d1_misses", "ll_misses"):
        assert rows[f"metric:{m}"]["verdict"] == "same (equal counts)", m
    diff = perflab("compare", "1", "3", cwd=tmp_path, env={"COLUMNS": "250"})
    assert diff.returncode == 0, diff.stderr
    line = next(ln for ln in diff.stdout.splitlines() if "│ instructions" in ln)
    assert "exact" in line and "A better" in line
    ratio = float(line.split("│")[7])
    assert 1.004 < ratio < 1.006, line
    assert "instructions of ./prog is +0.5 % in B" in diff.stdout
    assert "counted, not timed" in diff.stdout
    assert any("│ i1_misses" in ln and "same (equal counts)" in ln for ln in diff.stdout.splitlines())


def test_equal_counts_with_unequal_runs_are_equal_not_a_float_change(store):
    # The mean of 10 equal logs and of 5 differed by 6e-16: Welch's t called that change p 0.015.
    from perflab.stats import judge

    ten, five = [16_104_810.0] * 10, [16_104_810.0] * 5
    assert judge.counted_test(ten, five, 0.05)[:4] == (1.0, 1.0, 1.0, 1.0)
    a = _campaign(store, [0.5 + 0.01 * i for i in range(10)], [{"instructions": ten[0]}] * 10, SIMULATED)
    b = _campaign(store, [0.5 + 0.01 * i for i in range(5)], [{"instructions": ten[0]}] * 5, SIMULATED)
    ins = next(r for r in run_compare(CompareConfig(a, b), store).rows if r.measure == "metric:instructions")
    assert ins.untested and not ins.significant


def test_all_points_row_of_counts_is_judged_as_counts(store):
    """Two commands, 2 runs each a side, +0.5 % instructions at both: van Elteren's ranks over
    2 strata of 2 against 2 cannot reach 0.025; the counts' own test finds it."""
    def camp(scale: float) -> int:
        cid = store.start_campaign("run", SIMULATED)
        for rep in range(2):
            for label, ir in (("./x", 1e6), ("./y", 3e6)):
                store.add_measurement(cid, RunResult(wall_ns=int(0.5e9), user_s=0.5, sys_s=0.0, maxrss_kb=2048,
                                                     minflt=1, majflt=0, nvcsw=1, nivcsw=0, exit_code=0,
                                                     metrics={"instructions": scale * ir + rep}),
                                      {}, rep=rep, label=label)
        store.finish_campaign(cid, "done")
        return cid

    res = run_compare(CompareConfig(camp(1.0), camp(1.005)), store)
    row = next(r for r in res.rows if r.overall and r.measure == "metric:instructions")
    assert row.counted and row.significant and row.better == "A" and row.level == 0.95
    assert 1.0049 < row.lo < row.ratio < row.hi < 1.0051
