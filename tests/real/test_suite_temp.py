"""The suite's own temporary files: one directory per session under the user's TMPDIR, gone at
exit, and a killed session's directory removed by the next session (tests/conftest.py)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_a_session_leaves_nothing_and_sweeps_a_killed_ones(tmp_path):
    user_tmp = tmp_path / "user tmp"  # a space too: the session's paths are quoted where read
    user_tmp.mkdir()
    pid_max = int(pathlib.Path("/proc/sys/kernel/pid_max").read_text())
    killed = user_tmp / f"perflab-tests-{pid_max + 1}-x"  # no process has that pid
    (killed / "perflab-ctl-y").mkdir(parents=True)
    live = user_tmp / f"perflab-tests-{os.getpid()}-x"  # this session's pid: alive, kept
    live.mkdir()
    other = user_tmp / "perflab-tests-notes-x"  # named alike, but no pid: kept
    other.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PERFLAB_TESTS_TMP", "PYTEST_DEBUG_TEMPROOT")}
    env["TMPDIR"] = str(user_tmp)
    out = subprocess.run([sys.executable, "-c", "import os, tempfile, tests.conftest as c; "
                          "open(os.path.join(tempfile.mkdtemp(), 'f'), 'w').close(); "
                          "print(os.environ['TMPDIR'], c.USER_TMP, os.environ['PERFLAB_STATE_DIR'], sep='\\n')"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    session, user, state = out.stdout.splitlines()
    assert user == str(user_tmp) and pathlib.Path(session).parent == user_tmp
    assert pathlib.Path(state).parent == pathlib.Path(session)
    assert sorted(p.name for p in user_tmp.iterdir()) == sorted([live.name, other.name])
