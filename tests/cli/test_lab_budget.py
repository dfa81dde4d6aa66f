"""perflab lab's --budget refused in one line before anything runs."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("args, line", [
    (("--budget", "0"), "perflab: error: --budget must be a number of seconds above 0, got 0\n"),
    (("--budget", "60", "--quick"),
     "perflab: error: --budget is the full lab's: the quick lab has fixed settings; drop --quick or --budget\n"),
])
def test_a_bad_budget_is_one_line_before_anything_runs(tmp_path, args, line):
    p = subprocess.run([sys.executable, "-m", "perflab", "lab", *args, "--db", "l.db"], capture_output=True,
                       text=True, timeout=120, cwd=tmp_path)
    assert (p.returncode, p.stdout, p.stderr) == (2, "", line)
    assert not (tmp_path / "l.db").exists()
