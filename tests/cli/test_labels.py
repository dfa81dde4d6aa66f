"""Labels read as the user wrote them: a named workload's arguments once, -L values shown."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

TOML = r"""
[workload.gen]
command = ["echo", "generated"]

[workload.sf]
command = ["sh", "-c", "echo nps=$((1000*{threads}))"]
metrics = ['nps=(?P<nps>\d+)']
primary_metric = "nps"
"""


@pytest.fixture
def project(tmp_path):
    (tmp_path / "perflab.toml").write_text(textwrap.dedent(TOML).lstrip())
    return tmp_path


def labels(project, *args) -> list[str]:
    out = project / "h.json"
    p = subprocess.run([sys.executable, "-m", "perflab", "run", "--runs", "2", "--db", str(project / "p.db"),
                        "--export-json", str(out), *args], capture_output=True, text=True, cwd=project)
    assert p.returncode == 0, p.stderr
    return [r["command"] for r in json.loads(out.read_text())["results"]]


def test_named_workload_arguments_appear_once(project):
    assert labels(project, "-w", "gen", "--", "150", "50") == ["gen 150 50"]


def test_parameter_values_appear_in_a_label_without_placeholders(project):
    assert labels(project, "-w", "sf", "-L", "threads", "1,2") == ["sf (threads=1)", "sf (threads=2)"]


def test_placeholder_in_the_arguments_is_substituted(project):
    assert labels(project, "-w", "gen", "-L", "n", "1,2", "--", "-n", "{n}") == ["gen -n 1", "gen -n 2"]
