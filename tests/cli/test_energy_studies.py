"""Energy through the command line: run says once that energy is not measured here; variants refuses
a source it does not have."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perflab.measure.energy import choose_meter
from perflab.platform.energy import rapl_available
from perflab.platform.sysfs import Root


def _perflab(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    # wide: these tests read sentences, which piped output would wrap at 100 columns
    return subprocess.run([sys.executable, "-m", "perflab", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd, env={**os.environ, "COLUMNS": "400"})


def test_real_run_says_once_that_energy_is_not_measured_here(tmp_path):
    meter, note = choose_meter("auto")
    if meter is not None:
        pytest.skip(f"this machine has an energy source ({note})")
    p = _perflab("run", "--energy", "auto", "--runs", "2", "--db", str(tmp_path / "s.db"), "--", "true",
                 cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("energy: not measured:") == 1 and note in p.stdout
    assert "J/run" not in p.stdout
    if rapl_available(Root("/"))[0]:
        return
    p = _perflab("run", "--energy", "rapl", "--runs", "2", "--db", str(tmp_path / "s.db"), "--", "true",
                 cwd=tmp_path)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("perflab: error: --energy rapl: ") and len(p.stderr.splitlines()) == 1
    bad = [("solar", "Invalid value for '--energy'")]
    if shutil.which("ipmitool") is None:
        bad.append(("ipmi", "--energy ipmi: ipmitool not found"))
    for source, message in bad:
        p = _perflab("run", "--energy", source, "--db", str(tmp_path / "s.db"), "--", "true", cwd=tmp_path)
        assert p.returncode == 2 and p.stderr.startswith(f"perflab: error: {message}"), p.stderr
        assert len(p.stderr.splitlines()) == 1 and "Traceback" not in p.stderr


def test_real_variants_refuses_an_explicit_source_it_does_not_have(tmp_path):
    if rapl_available(Root("/"))[0]:
        pytest.skip("this machine has RAPL")
    src = tmp_path / "w.c"
    src.write_text("int main(void) { return 0; }\n")
    p = _perflab("variants", "--energy", "rapl", "--source", str(src), "--variant", "O1=-O1",
                 "--db", str(tmp_path / "s.db"), "--", "{exe}", cwd=tmp_path)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1, p.stderr
    assert p.stderr.startswith("perflab: error: --energy rapl: ")
    assert not list(tmp_path.glob("**/*.o"))  # refused before anything was built
