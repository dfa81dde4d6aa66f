"""perflab variants --link-order-demo --until-decided: real builds and runs, decided well inside the
budget."""

from __future__ import annotations

import json
import re

from perflab.cli import main


def test_link_order_demo_until_decided_end_to_end(tmp_path, capsys, monkeypatch):
    """Real builds and runs: glibc's sin is about 1.5x slower than the archive's polynomial, a
    change the design decides at an early look, well inside the budget."""
    monkeypatch.setenv("PERFLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "400")
    out = tmp_path / "v.json"
    main(["variants", "--link-order-demo", "--until-decided", "--min-runs", "4", "--max-runs", "16",
          "--db", str(tmp_path / "v.db"), "--json", str(out)])
    text = " ".join(capsys.readouterr().out.split())
    data = json.loads(out.read_text())["result"]
    bad = {r["name"]: r for r in data["variants"]}["archive-first"]["comparisons"]["wall_s"]
    assert bad["sequential"] and bad["ratio"] > 1.0
    assert bad["decision"] == "larger" or not data["sequential"]["decided"]
    assert data["rounds"] <= 16 and "measured until decided" in text
    assert re.search(r"archive-first: elapsed \+\d", text) and "no significant difference" not in text
