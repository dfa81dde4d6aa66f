"""perflab fleet report --test through its command line: the option picks the test."""

from __future__ import annotations

from perflab.store import open_store
from tests.studies.test_fleet_scale import _farm


def test_cli_test_option_picks_the_test(tmp_path):
    import json
    import subprocess
    import sys

    db = str(tmp_path / "f.db")
    with open_store(db) as store:
        planted = _farm(store, tmp_path, 20, 20, seed=2, plant=True)
    for test, correction in (("runs", "Holm"), ("medians", "Bonferroni")):
        r = subprocess.run([sys.executable, "-m", "perflab", "fleet", "report", "big", "--db", db, "--json", "-",
                            "--test", test], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        rep = json.loads(r.stdout)
        assert sorted(s["host"] for s in rep["slow_hosts"]) == sorted(planted)
        assert {s["correction"] for s in rep["slow_hosts"]} == {correction}
    r = subprocess.run([sys.executable, "-m", "perflab", "fleet", "report", "big", "--db", db, "--test", "ranks"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
