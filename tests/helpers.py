"""Helpers the tiers share: perflab as a user runs it (its installed entry point, in its own process),
and the gate's stored campaigns of chosen wall times. A test file imports from here, from its own
tier or from a lower one, never from a higher tier (tests/unit/test_layout.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from perflab.errors import PerflabError
from perflab.model import RunResult

# perflab as a user runs it: the installed entry point, in its own process.
PERFLAB = str(Path(sys.executable).with_name("perflab"))


def perflab(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([PERFLAB, *args], capture_output=True, text=True, cwd=cwd, timeout=120)


XSD = Path(__file__).parent / "data" / "junit-gitlab.xsd"


def _result(wall: float) -> RunResult:
    return RunResult(wall_ns=int(wall * 1e9), user_s=wall, sys_s=0.0, maxrss_kb=1000, minflt=0,
                     majflt=0, nvcsw=0, nivcsw=0, exit_code=0)


def _campaign(store, study: str, walls, host: int | None = None, label: str = "work") -> int:
    cid = store.start_campaign(study, {}, host_id=host)
    for i, w in enumerate(walls):
        store.add_measurement(cid, _result(w), {"cpu": 0} if study == "cores" else {}, rep=i, label=label)
    store.finish_campaign(cid, "done")
    return cid


def _baselines_roundtrip(store) -> None:
    a = _campaign(store, "run", [1.0, 1.1])
    b = _campaign(store, "run", [1.0, 1.1])
    assert store.set_baseline("main", a, note="nightly").campaign_id == a
    assert store.set_baseline("main", b).campaign_id == b  # the name moves
    store.set_baseline("release/1.2", a)
    assert [x.name for x in store.baselines()] == ["main", "release/1.2"]
    assert store.baseline("main").note == ""
    assert store.remove_baseline("main").campaign_id == b
    assert [x.name for x in store.baselines()] == ["release/1.2"]
    assert store.campaign(b).id == b  # the campaign stays
    with pytest.raises(PerflabError, match="no baseline named 'main'"):
        store.baseline("main")
