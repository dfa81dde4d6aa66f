"""`perflab report` without ids: the latest lab run, or, in a store without one, the newest
campaign of each study, named on stderr so the reader knows what stood in for a lab."""

from __future__ import annotations

import subprocess
import sys

from perflab.store import open_store
from tests.studies.test_report import _campaign


def _report(db: str, *ids: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perflab", "report", *ids, "--db", db, "-o", "-",
                           "--format", "markdown"], capture_output=True, text=True)


def test_a_store_without_a_lab_names_the_campaigns_reported(tmp_path):
    db = str(tmp_path / "r.db")
    with open_store(db) as store:
        _campaign(store, "run", [1.0, 1.1], summary={"verdict": "old run"})
        newest = _campaign(store, "run", [1.0, 1.1], summary={"verdict": "new run"})
        micro = _campaign(store, "micro", [0.1, 0.1], summary={"verdict": "micro ok"})
    p = _report(db)
    assert p.returncode == 0, p.stderr
    assert "new run" in p.stdout and "old run" not in p.stdout
    assert (f"no lab run in {db}: reporting the newest campaign of each study: {newest} (run), "
            f"{micro} (micro)") in p.stderr
    # named campaigns: nothing stands in, nothing to say
    p = _report(db, "1")
    assert p.returncode == 0 and "old run" in p.stdout and "no lab run" not in p.stderr
