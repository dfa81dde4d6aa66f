"""bundle verify explains an output mismatch: the first lines that differ, and checksum_metric."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

import pytest

from perflab.studies.bundle.mismatch import mismatch_hint, output_differences


def test_differences_name_the_lines():
    a = "bestmove e2e4\nnodes 1000 nps 5123\ndone\n"
    b = "bestmove e2e4\nnodes 1000 nps 4987\ndone\n"
    assert output_differences(a, b) == ["line 2: bundle 'nodes 1000 nps 5123' | normal 'nodes 1000 nps 4987'"]


def test_differences_stop_at_three_and_show_missing_lines():
    a = "\n".join(f"x{i}" for i in range(10))
    assert len(output_differences(a, "")) == 3
    assert output_differences("a\nb", "a") == ["line 2: bundle 'b' | normal '(no line)'"]


def test_hint_says_numbers_only_and_points_to_checksum_metric():
    d = output_differences("nps 5123\n", "nps 4987\n")
    hint = mismatch_hint(d, ["nps"])
    assert hint.startswith("the lines differ only in numbers")
    assert "checksum_metric" in hint and "(its metrics: nps)" in hint
    assert mismatch_hint(output_differences("move e2e4\n", "move d2d4\n"), []).startswith(
        "stdout is compared byte for byte")


@pytest.mark.skipif(shutil.which("strace") is None, reason="bundle traces with strace")
def test_cli_verify_shows_the_differing_line(tmp_path):
    (tmp_path / "perflab.toml").write_text(textwrap.dedent(r"""
        [workload.eng]
        command = ["sh", "-c", "echo 'bestmove e2e4'; echo \"nodes 1000 nps $(date +%N)\""]
        metrics = ['nps (?P<nps>\d+)']
    """))

    def perflab(*args):
        return subprocess.run([sys.executable, "-m", "perflab", *args, "--db", "p.db"], capture_output=True,
                              text=True, cwd=tmp_path, timeout=120)

    p = perflab("bundle", "-o", "b.tgz", "-w", "eng")
    assert p.returncode == 0, p.stderr
    p = perflab("bundle", "verify", "b.tgz")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "MISMATCH" in p.stdout
    assert "  line 2: bundle 'nodes 1000 nps " in p.stdout
    assert "hint: the lines differ only in numbers" in p.stdout and "checksum_metric" in p.stdout
