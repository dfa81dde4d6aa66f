"""perflab compare's page rendered in headless Chromium."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from perflab.store import open_store
from tests.studies.test_compare_kinds import _synthetic


@pytest.fixture
def store(tmp_path):
    s = open_store(str(tmp_path / "perflab.db"))
    yield s
    s.close()


@pytest.mark.skipif(shutil.which("chromium") is None,
                    reason="chromium not installed (scripts/install-system-packages.sh installs it)")
def test_compare_page_renders_in_headless_chromium(tmp_path, store):
    points = [(v, {"variant": v}) for v in ("O2", "O3", "m32")]
    a = _synthetic(store, "variants", points, {}, seed=1)
    b = _synthetic(store, "variants", points, {2: 1.2}, seed=2)
    page = tmp_path / "c.html"
    p = subprocess.run([sys.executable, "-m", "perflab", "compare", str(a), str(b), "--db",
                        str(tmp_path / "perflab.db"), "--html", str(page)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    dom = subprocess.run([shutil.which("chromium"), "--headless", "--no-sandbox", "--disable-gpu",
                          "--no-first-run", "--disable-background-networking", "--enable-logging=stderr",
                          f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert [ln for ln in dom.stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln] == []
    # every measure's section (an h2 with an id) has its plot
    assert dom.stdout.count("<svg") == dom.stdout.count("<h2 id=") == 3
    assert "variant=m32" in dom.stdout and "A better" in dom.stdout
