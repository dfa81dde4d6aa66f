"""perflab compare's verdicts through its command line: instances of two sleeps, a declared
direction, --min-effect, two runs a side, the footnote's threshold."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from perflab.store import open_store
from perflab.studies.compare.study import CompareConfig, run_compare
from tests.studies.test_compare_verdicts import _result, _run_campaign


@pytest.fixture
def store(tmp_path):
    s = open_store(str(tmp_path / "perflab.db"))
    yield s
    s.close()


def _cli(*args, cwd=None, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perflab", *args], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "COLUMNS": "400", **(env or {})}, timeout=300)


def test_instances_of_two_sleeps_through_the_cli(tmp_path):
    db = str(tmp_path / "i.db")
    for t in ("0.01", "0.02"):
        p = _cli("instances", "--max", "2", "--reps", "3", "--db", db, "--", "sleep", t)
        assert p.returncode == 0, p.stderr[-2000:]
    p = _cli("compare", "1", "2", "--db", db, "--json", "-")
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr[-2000:]
    data = json.loads(p.stdout)["result"]
    assert any(r["measure"] == "wall_s" for r in data["rows"])


@pytest.mark.parametrize("higher, expect", [("true", "B"), ("false", "A")])
def test_declared_direction_of_a_real_metric(tmp_path, higher, expect):
    (tmp_path / "perflab.toml").write_text(
        "[workload.enc]\ncommand = \"echo fps=$FPS\"\nshell = true\n"
        f"metrics = ['fps=(?P<fps>[\\d.]+)']\nprimary_metric = \"fps\"\nhigher_is_better = {higher}\n")
    db = str(tmp_path / "d.db")
    for fps in ("100", "150"):
        p = _cli("run", "-w", "enc", "--runs", "6", "--db", db, cwd=tmp_path, env={"FPS": fps})
        assert p.returncode == 0, p.stderr[-2000:]
    p = _cli("compare", "1", "2", "--db", db, "--json", "-", cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    data = json.loads(p.stdout)["result"]
    row = next(r for r in data["rows"] if r["measure"] == "metric:fps")
    assert row["significant"] and row["ratio"] == pytest.approx(1.5)
    assert row["better"] == expect and row["higher_is_better"] is (higher == "true")
    assert data["primary"] == "metric:fps" and f"{expect} better" in data["verdict"]
    assert data["verdict"].startswith("fps of enc is +50.0 %")


def test_min_effect_option_and_bad_value(store, tmp_path):
    # 6 runs a side: 4 could not pass Holm's first step over the 3 measures (exit 3, cannot tell)
    a = _run_campaign(store, [0.1, 0.101, 0.099, 0.1, 0.1, 0.1])
    b = _run_campaign(store, [0.1, 0.101, 0.099, 0.1, 0.1, 0.1])
    db = str(tmp_path / "perflab.db")
    p = _cli("compare", str(a), str(b), "--db", db, "--min-effect", "2.5%", "--json", "-")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["result"]["min_effect"] == pytest.approx(0.025)
    p = _cli("compare", str(a), str(b), "--db", db, "--min-effect", "lots")
    assert p.returncode == 2 and "--min-effect" in p.stderr and "Traceback" not in p.stderr


def test_two_runs_a_side_print_the_level_they_have(store, tmp_path):
    a = _run_campaign(store, [0.10, 0.11])
    b = _run_campaign(store, [0.20, 0.21])
    res = run_compare(CompareConfig(a, b), store)
    wall = next(r for r in res.rows if r.measure == "wall_s")
    assert wall.level == pytest.approx(2 / 3)
    p = _cli("compare", str(a), str(b), "--db", str(tmp_path / "perflab.db"),
             "--html", str(tmp_path / "c.html"), "--json", str(tmp_path / "c.json"))
    assert p.returncode == 3, p.stderr  # 2 runs a side cannot pass a test: "cannot tell", not "same"
    assert "95%" not in p.stdout and "67%" in p.stdout and "verdict: cannot tell whether wall time" in p.stdout
    assert json.loads((tmp_path / "c.json").read_text())["result"]["rows"][0]["ci"]["level"] == pytest.approx(2 / 3)
    assert "(67%)" in (tmp_path / "c.html").read_text()


def test_footnote_states_the_threshold_the_table_used(store, tmp_path):
    def campaign(slow: float) -> int:
        cid = store.start_campaign("variants", {})
        for rep in range(8):
            for i, v in enumerate(("O2", "O3")):
                store.add_measurement(cid, _result(0.1 * (1 + i) * slow * (1 + 0.001 * rep)),
                                      {"variant": v}, rep=rep, label=v)
        store.finish_campaign(cid, "done")
        return cid

    a, b = campaign(1.0), campaign(1.1)
    res = run_compare(CompareConfig(a, b), store)
    assert {r.alpha_used for r in res.rows} == {0.025}
    page = tmp_path / "c.html"
    p = _cli("compare", str(a), str(b), "--db", str(tmp_path / "perflab.db"), "--html", str(page))
    assert p.returncode == 0, p.stderr
    html = page.read_text()
    assert "adjusted p is below 0.025" in html and "below 0.05 and" not in html
    assert "alpha/2 = 0.025 in each of two families" in p.stdout
