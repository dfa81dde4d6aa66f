"""perflab compare with replicate campaigns a side, through its command line: the sides listed, bad
sides refused."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import pytest

from perflab.store import open_store
from tests.studies.test_compare_replicated import _levels


@pytest.fixture
def store(tmp_path):
    s = open_store(str(tmp_path / "perflab.db"))
    yield s
    s.close()


def _cli(*args, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "400"}
    return subprocess.run([sys.executable, "-m", "perflab", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=120)


def test_cli_lists_and_bad_sides(store, tmp_path):
    rng = random.Random(5)
    _levels(store, rng, [0.100, 0.101, 0.099, 0.100])
    store.close()
    db = str(tmp_path / "perflab.db")
    p = _cli("compare", "1,2", "3,4", "--db", db, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "campaigns 1,2 (run) vs campaigns 3,4 (run)" in p.stdout and "note: replicated" in p.stdout
    for args, words in ((("1", "3,4"), "2 or more a side"), (("1,x", "3,4"), "comma-separated")):
        p = _cli("compare", *args, "--db", db, cwd=tmp_path)
        assert p.returncode == 2 and words in p.stderr and "Traceback" not in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1
