"""perflab compare through its command line: JSON and HTML with the intervals' levels."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from perflab.store import open_store
from tests.studies.test_compare_kinds import _synthetic


@pytest.fixture
def store(tmp_path):
    s = open_store(str(tmp_path / "perflab.db"))
    yield s
    s.close()


def test_compare_cli_json_and_html_with_levels(tmp_path, store):
    points = [(v, {"variant": v}) for v in ("O2", "O3")]
    a = _synthetic(store, "variants", points, {}, seed=1)
    b = _synthetic(store, "variants", points, {0: 0.9}, seed=2)
    db, js, page = str(tmp_path / "perflab.db"), tmp_path / "c.json", tmp_path / "c.html"
    p = subprocess.run([sys.executable, "-m", "perflab", "compare", str(a), str(b), "--db", db,
                        "--json", str(js), "--html", str(page), "--alpha", "0.1"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    data = json.loads(js.read_text())["result"]
    row = next(r for r in data["rows"] if r["key"] == "variant=O2" and r["measure"] == "wall_s")
    # Moses' interval at 10 runs a side: the narrowest that reaches 90 % really covers 91.1 %
    assert set(row["ci"]) == {"low", "high", "level"} and row["ci"]["level"] == pytest.approx(0.9108, abs=1e-4)
    assert row["significant"] and row["better"] == "B" and row["ci"]["high"] < 1
    html = page.read_text()
    assert html.count("<svg") == len({r["measure"] for r in data["rows"]})
    assert "variant=O2" in html and "(91%)" in html and "B better" in html
    # self-contained: nothing is fetched (namespace URIs in the SVG are names, not requests)
    for needle in ("src=", 'href="http', "<script", "<link", "@import", "url(http"):
        assert needle not in html, needle
    assert html.index("class=\"verdict\"") < html.index("<svg")  # the answer before the plots
