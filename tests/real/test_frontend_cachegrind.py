"""perflab frontend --instrument cachegrind: simulated I1 misses per dispatch against code size on
a machine without a PMU, with a 4 KiB simulated I1 so the knee falls inside a cheap scan
(1 KiB..8 KiB, 7 sizes, 2 runs each: about 5 s)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perflab.studies.frontend import study as fe
from perflab.studies.frontend import sim as frontend_sim
from perflab.model.units import fmt_bytes

I1 = 4096
MODEL = f"I1={I1},4,64 D1=32768,8,64 LL=1048576,16,64"
SCAN = ("--instrument", "cachegrind", "--cache-model", MODEL, "--min-size", "1K", "--max-size", "8K",
        "--points-per-octave", "2", "--iters", "50000", "--reps", "2")

needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None or shutil.which("gcc") is None,
                                    reason="valgrind and gcc needed (make system installs them)")


def perflab(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PERFLAB_DB": str(cwd / "perflab.db"), "COLUMNS": "400", **(env or {})}
    return subprocess.run([sys.executable, "-m", "perflab", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=240)


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.fixture(scope="module")
def scan(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fe-cg")
    p = perflab("frontend", *SCAN, "--json", str(tmp / "r.json"), cwd=tmp)
    assert p.returncode == 0, p.stderr
    return p.stdout, json.loads((tmp / "r.json").read_text())["result"]


@needs_valgrind
def test_i1_misses_rise_past_the_simulated_i1(scan):
    _, js = scan
    assert js["instrument"] == "cachegrind" and js["cache_model"] == MODEL and js["cache_model_source"] == "given"
    assert js["expected_knee_bytes"] == I1
    pts = sorted(js["points"], key=lambda p: p["bytes"])
    assert len(pts) == 7 and all(p["reps"] == 2 and p["mode"] == "4k" for p in pts)
    inside = [p["i1_per_dispatch"] for p in pts if p["bytes"] < 0.75 * I1]
    past = [p["i1_per_dispatch"] for p in pts if p["bytes"] > 1.9 * I1]
    # well inside the I1 only start-up misses; at twice its size most dispatches miss
    assert max(inside) < 0.1 and min(past) > 10 * max(inside), pts
    beyond = [p["i1_per_dispatch"] for p in pts if p["bytes"] > I1]
    assert beyond == sorted(beyond)  # more code, more misses, past the I1
    # the dispatch loop's instructions do not grow with the code: the misses are the I1's
    irs = [p["ir_per_dispatch"] for p in pts]
    assert max(irs) < 1.05 * min(irs)
    assert all(p["ll_i_per_dispatch"] is not None and p["ll_i_per_dispatch"] < p["i1_per_dispatch"]
               for p in pts if p["bytes"] > 1.9 * I1)
    # determinism measured: the counts of one size moved by under 1 % between its runs
    assert all(p["count_spread"] is not None and p["count_spread"] < 0.01 for p in pts)


@needs_valgrind
def test_knee_json_and_terminal_agree(scan):
    out, js = scan
    text = _flat(out)
    (knee,) = js["knees"]
    assert knee["measure"] == frontend_sim.MEASURE and knee["knee_bytes"] is not None
    assert knee["slope_after"] > knee["slope_before"]
    assert 0.5 <= knee["knee_bytes"] / I1 <= 2  # the knee sits at the simulated I1
    assert "simulated I1" in knee["nearest"]
    verdict = _flat(js["verdict"])
    assert f"verdict: {verdict}" in text
    assert f"past a knee at {fmt_bytes(knee['knee_bytes'])}" in verdict and "at the simulated I1 size" in verdict
    assert "Valgrind models no TLB" in verdict and "stays open without hardware counters" in verdict
    assert f"knee (4k pages): {fmt_bytes(knee['knee_bytes'])}" in text
    assert f"cache model {MODEL} (given)" in text and f"expected knee: the simulated I1, {fmt_bytes(I1)}" in text
    # the terminal is the JSON's value rendered: the same result read back renders the same lines
    from rich.console import Console

    from perflab.report.terminal.frontend import render

    result = fe.FrontendResult.from_dict(js)
    console = Console(record=True, width=400, color_system=None)
    render(result, console)
    assert _flat(console.export_text()) in text


def test_no_pmu_line_points_to_cachegrind():
    assert "--instrument cachegrind" in fe.counters_reason(False, "no hardware performance counters")


def test_bad_combinations_are_one_line_exit_2(tmp_path):
    bad = [(("--cache-model", MODEL), "--cache-model is for --instrument cachegrind")]
    if shutil.which("valgrind"):  # Valgrind is asked for first
        bad.append((("--instrument", "cachegrind", "--modes", "4k,2m"), "models no TLB"))
    for args, says in bad:
        p = perflab("frontend", *args, cwd=tmp_path)
        assert p.returncode == 2 and says in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    # without Valgrind on PATH
    p = perflab("frontend", "--instrument", "cachegrind", cwd=tmp_path, env={"PATH": str(tmp_path)})
    assert p.returncode == 2, p.stderr
    assert "needs Valgrind, which is not installed" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr


@needs_valgrind
def test_html_section_draws_the_i1_curve_of_its_table(scan):
    from types import SimpleNamespace

    from perflab.report.build import build_section

    _, js = scan
    camp = SimpleNamespace(id=1, study="frontend", status="done", summary=js, labels={}, host_id=None)
    sec = build_section(camp, [])
    (table,) = sec.tables
    (plot,) = sec.plots
    assert MODEL in table.title and plot.source == table.title and sec.verdict == js["verdict"]
    col = table.columns.index(plot.column)
    pts = sorted(js["points"], key=lambda p: p["bytes"])
    assert [m.value for m in plot.marks] == [row[col] for row in table.rows] == [p["i1_per_dispatch"] for p in pts]
    assert "simulated I1 (expected knee)" in plot.svg and "<svg" in plot.svg


def test_sim_harness_finds_the_i1_knee_and_no_knee_on_a_flat_floor():
    from perflab.checks.frontend import sim_check

    r = sim_check(runs=30)
    assert r["detection"] == 1.0 and r["false_positive"] == 0.0, r


def test_resume_of_a_simulated_scan_is_refused_in_one_line(tmp_path):
    """perflab resume restores no Cachegrind executor: it says to run the scan again."""
    import dataclasses
    import subprocess
    import sys

    from perflab.store import open_store
    from perflab.studies.frontend import study as fe

    cfg = fe.FrontendConfig(instrument="cachegrind", cache_model="I1=4096,4,64 D1=32768,8,64 LL=33554432,16,64",
                            perf_span=False, modes=("4k",))
    db = tmp_path / "r.db"
    with open_store(str(db)) as store:
        cid = store.start_campaign("frontend", dataclasses.asdict(cfg))
    r = subprocess.run([sys.executable, "-m", "perflab", "resume", str(cid), "--db", str(db)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert "--instrument cachegrind" in lines[0] and "again" in lines[0], lines[0]
