"""A store URL's password never printed by the command line."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest


@pytest.mark.parametrize("url", ["postgresql://u:s3cret@host:notaport/db", "postgresql://u:s3cret@[::1/db",
                                 "postgresql://u:s3cret@127.0.0.1:1/db"])
def test_store_url_password_is_never_printed(url, tmp_path):
    import sys

    r = subprocess.run([sys.executable, "-m", "perflab", "results", "--db", url], capture_output=True, text=True,
                       cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")})
    assert r.returncode == 2 and r.stderr.startswith("perflab: error:"), r.stderr
    assert "s3cret" not in r.stdout + r.stderr and "u:***@" in r.stderr
