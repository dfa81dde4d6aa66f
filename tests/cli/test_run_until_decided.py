"""perflab run --until-decided: what cannot be decided refused in one line and exit status 2."""

from __future__ import annotations

import subprocess

import pytest

from tests.helpers import PERFLAB


@pytest.mark.parametrize("args,msg", [
    (["--until-decided", "--runs", "5", "true", "false"], "--until-decided chooses the runs itself: drop --runs"),
    (["--until-decided", "--", "true"], "--until-decided compares commands: give two or more"),
    (["--until-decided", "--min-effect", "200%", "true", "false"], "--min-effect 200% is out of range"),
])
def test_cli_refuses_what_cannot_be_decided(tmp_path, args, msg):
    p = subprocess.run([PERFLAB, "run", "--db", str(tmp_path / "r.db"), *args], capture_output=True,
                       text=True, timeout=120, cwd=tmp_path)
    assert p.returncode == 2 and msg in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
