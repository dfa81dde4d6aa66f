"""perflab report and compare through the command line: HTML and Markdown written, JSON, a missing
campaign, points with one observation a side."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from perflab.store import open_store
from tests.studies.test_report import _campaign, _result


@pytest.fixture()
def store(tmp_path):
    s = open_store(str(tmp_path / "r.db"))
    yield s
    s.close()


def test_report_cli_writes_html_and_markdown(tmp_path, store):
    _campaign(store, "run", [1.0, 1.02, 0.99], summary={"verdict": "cmd took 1.0 s"})
    db = str(tmp_path / "r.db")
    out = tmp_path / "rep.html"
    p = subprocess.run([sys.executable, "-m", "perflab", "report", "--db", db, "-o", str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "cmd took 1.0 s" in out.read_text()
    p = subprocess.run([sys.executable, "-m", "perflab", "report", "--db", db, "-o", "-",
                        "--format", "markdown"], capture_output=True, text=True)
    assert p.returncode == 0 and "> cmd took 1.0 s" in p.stdout


def test_compare_cli_json_and_missing_campaign(tmp_path, store):
    # 6 runs a side: 4 cannot pass Holm's first step over the measures (compare says so, exit 3)
    a = _campaign(store, "run", [1.0, 1.01, 0.99, 1.0, 1.0, 1.02])
    b = _campaign(store, "run", [2.0, 2.01, 1.99, 2.0, 2.0, 2.02])
    db = str(tmp_path / "r.db")
    p = subprocess.run([sys.executable, "-m", "perflab", "compare", str(a), str(b), "--db", db,
                        "--json", "-"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)["result"]
    wall = next(r for r in data["rows"] if r["measure"] == "wall_s")
    assert abs(wall["ratio"] - 2.0) < 0.05
    p = subprocess.run([sys.executable, "-m", "perflab", "compare", str(a), "999", "--db", db],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "Traceback" not in p.stderr and "999" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_compare_of_points_with_one_observation_a_side_is_refused_not_empty(tmp_path, store):
    """Two instances scans of 1 round: every point matched, none comparable: one line, exit 2."""
    for level in (1.0, 2.0):
        cid = store.start_campaign("instances", {}, None)
        for n in (1, 2):
            for copy in range(n):
                store.add_measurement(cid, _result(0.1 * level), {"policy": "none", "n": n, "copy": copy},
                                      rep=0, label="w")
        store.finish_campaign(cid, "done")
    p = subprocess.run([sys.executable, "-m", "perflab", "compare", "1", "2", "--db", str(tmp_path / "r.db")],
                       capture_output=True, text=True)
    assert p.returncode == 2 and p.stdout == "" and len(p.stderr.strip().splitlines()) == 1, p.stdout + p.stderr
    assert "share 2 point(s), but no point has 2 or more observations on both sides" in p.stderr
