"""A machine without an energy source stays silent about energy unless asked: `perflab run`
prints its table first, and a one-line error stays one line (the energy note stood before both
on every laptop, CI runner and cloud guest)."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from perflab.measure.energy import choose_meter
from perflab.store import SCHEMA_VERSION, open_store

pytestmark = pytest.mark.skipif(choose_meter("auto")[0] is not None,
                                reason="this machine has an energy source: its note is said")


def _perflab(tmp: Path, *args: str, path_first: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "400"}
    if path_first:
        env["PATH"] = f"{path_first}:{env['PATH']}"
    return subprocess.run([sys.executable, "-m", "perflab", *args], capture_output=True, text=True,
                          timeout=300, cwd=tmp, env=env)


def test_run_prints_its_table_first(tmp_path):
    p = _perflab(tmp_path, "run", "--runs", "1", "--db", "s.db", "--", "true")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[0].strip() == "perflab run"  # the table's title, nothing before
    assert "energy" not in p.stdout + p.stderr
    # asked for, the note is said once, and says why
    p = _perflab(tmp_path, "run", "--energy", "auto", "--runs", "1", "--db", "s.db", "--", "true")
    assert p.returncode == 0 and p.stdout.splitlines()[0].startswith("energy: not measured: ")


def _stores(tmp: Path) -> None:
    (tmp / "corrupt.db").write_bytes(b"this is not a database\n" * 50)
    open_store(str(tmp / "newer.db")).close()
    conn = sqlite3.connect(tmp / "newer.db")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.execute("INSERT INTO schema_version (version, applied) VALUES (?, '2030-01-01')", (SCHEMA_VERSION + 1,))
    conn.commit()
    conn.close()
    (tmp / "sum.c").write_text("int main(void) { return 0; }\n")
    fake = tmp / "fakeperf"
    fake.mkdir()
    (fake / "perf").write_text("#!/bin/sh\necho 'Error: Access to performance monitoring and "
                               "observability operations is limited.' >&2\nexit 255\n")
    (fake / "perf").chmod(stat.S_IRWXU)


ERRORS = [
    ("run", "--db", "/missing/dir/x.db", "--", "true"),
    ("run", "-w", "minihlt", "--db", "s.db", "--", "--no-such-option"),
    ("run", "--db", "corrupt.db", "--", "true"),
    ("run", "--db", "newer.db", "--", "true"),
    ("run", "--db", "postgresql://perflab@127.0.0.1:1/none", "--", "true"),
    ("variants", "--db", "v.db", "--source", "sum.c", "-V", "bad=-fno-such-flag-here", "-V", "O1=-O1",
     "--baseline", "bad", "--rounds", "2", "--", "{exe}"),
    ("variants", "--db", "v.db", "--source", "sum.c", "-V", "m32=-m32 -lno_such_library", "-V", "O1=-O1",
     "--baseline", "m32", "--rounds", "2", "--", "{exe}"),
    ("run", "--perf-stat", "--db", "s.db", "--runs", "2", "--", "true"),
]


def test_one_line_errors_stay_one_line(tmp_path):
    _stores(tmp_path)
    for args in ERRORS:
        fake = str(tmp_path / "fakeperf") if "--perf-stat" in args else None
        p = _perflab(tmp_path, *args, path_first=fake)
        lines = (p.stdout + p.stderr).splitlines()
        assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("perflab: error: "), (args, lines)
    if os.geteuid() != 0:  # root writes a read-only file all the same
        ro = tmp_path / "ro"
        ro.mkdir()
        open_store(str(ro / "r.db")).close()
        (ro / "r.db").chmod(0o444)
        ro.chmod(0o555)
        try:
            p = _perflab(tmp_path, "run", "--runs", "1", "--db", str(ro / "r.db"), "--", "true")
        finally:
            ro.chmod(0o755)
        assert p.returncode == 2 and len((p.stdout + p.stderr).splitlines()) == 1, p.stdout + p.stderr
