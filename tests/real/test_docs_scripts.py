"""scripts/pg-local, the scratch PostgreSQL server docs/fleet.md's examples start: it prints a URL
that works with its password and not without it, stops, and starts again on the same data."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.conftest import PG_BIN

ROOT = Path(__file__).resolve().parents[2]
PG_LOCAL = ROOT / "scripts" / "pg-local"

pytestmark = pytest.mark.postgres


def _script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(PG_LOCAL), *args], capture_output=True, text=True, timeout=120)


@pytest.fixture
def pg_dir():
    if not os.path.exists(os.path.join(PG_BIN, "initdb")):
        pytest.skip(f"PostgreSQL server binaries not found in {PG_BIN}")
    psycopg = pytest.importorskip("psycopg")
    # Under /tmp itself, not a 0700 mkdtemp: as root the server runs as user postgres, who must
    # reach the directory.
    base = Path(tempfile.mkdtemp(prefix="perflab-pg-local-", dir="/tmp"))
    base.chmod(0o755)
    yield base / "pg", psycopg
    _script("stop", str(base / "pg"))
    shutil.rmtree(base, ignore_errors=True)


def test_start_gives_a_url_that_needs_its_password(pg_dir):
    d, psycopg = pg_dir
    out = _script("start", str(d), "--password", "hunter2", "--db", "fleet")
    assert out.returncode == 0, out.stderr
    url = out.stdout.strip().splitlines()[-1]
    assert url.startswith("postgresql://postgres:hunter2@127.0.0.1:") and url.endswith("/fleet")
    with psycopg.connect(url) as conn:
        assert conn.execute("select 1").fetchone() == (1,)
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(url.replace("hunter2", "wrong"))
    # Stopped, nothing answers; started again on the same data and port, the URL works again.
    assert _script("stop", str(d)).returncode == 0
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(url, connect_timeout=3)
    again = _script("start", str(d), "--password", "hunter2", "--db", "fleet")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip().splitlines()[-1] == url
    with psycopg.connect(url) as conn:
        assert conn.execute("select 1").fetchone() == (1,)


def test_bad_use_is_one_line_exit_2(tmp_path):
    out = _script("frobnicate", str(tmp_path / "pg"))
    assert out.returncode == 2 and out.stderr.count("\n") == 1 and "start or stop" in out.stderr
    out = _script("stop", str(tmp_path / "nothing"))
    assert out.returncode == 2 and "no server in" in out.stderr
