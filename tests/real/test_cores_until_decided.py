"""perflab cores --until-decided on real runs pinned to two CPUs, through the command line and the
store."""

from __future__ import annotations

import json

from perflab.cli import main
from perflab.studies.cores.result import CoresResult


def test_real_scan_until_decided_end_to_end(tmp_path):
    """Real runs pinned to two CPUs, through the CLI and the store: blocks until the budget or a
    decision, and a verdict that rules out only what every CPU's interval rules out."""
    out = tmp_path / "cores.json"
    try:
        main(["cores", "--until-decided", "--cpus", "0,1", "--rounds", "4", "--blocks", "2", "--span", "0",
              "--max-runs", "8", "--db", f"sqlite:///{tmp_path / 'r.db'}", "--json", str(out), "--", "true"])
    except SystemExit as exc:
        assert exc.code in (0, None)
    r = CoresResult.from_dict(json.loads(out.read_text())["result"])
    q = r.sequential
    assert q is not None and q["budget"] == 4 and q["looks"] and r.rounds in (4, 6, 8)
    assert r.stopped in ("decided", "budget") and r.runs == 2 * r.rounds
    if q["decided"]:
        assert "no CPU is slower than the rest by 2% or more" in r.verdict or r.slow
    else:
        assert "cannot tell whether CPU" in r.verdict and "no CPU is slower" not in r.verdict
