"""perflab run --until-decided on real commands five times apart: slower, or cannot tell."""

from __future__ import annotations

import json
import subprocess
from tests.helpers import PERFLAB


def test_real_commands_five_times_apart_end_slower_or_cannot_tell(tmp_path):
    # Real processes: on a quiet machine this stops at an early look with "slower"; a machine
    # loaded enough may leave it open at the budget, which must then say so (never "faster" or
    # "no change"), so the test does not depend on the machine's speed.
    p = subprocess.run([PERFLAB, "run", "--db", str(tmp_path / "r.db"), "--until-decided", "--max-runs", "60",
                        "--json", str(tmp_path / "r.json"), "sleep 0.01", "sleep 0.05"],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    d = json.loads((tmp_path / "r.json").read_text())["result"]
    rel, q = d["benchmarks"][1]["relative"], d["sequential"]
    assert len(d["benchmarks"][1]["times"]) <= 60 and "measured until decided" in p.stdout
    if q["decided"]:
        assert d["stopped_by"] == "decided" and rel["verdict"] == "slower", rel
    else:
        assert d["stopped_by"] == "budget" and rel["decision"] is None and q["needs_runs"] > 60
        assert "cannot tell within the budget" in p.stdout
