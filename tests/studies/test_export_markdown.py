"""hyperfine's Markdown export: seconds to 3 decimals and milliseconds to 1, as hyperfine prints them."""

from __future__ import annotations

import pytest

from perflab.measure.executor import MockExecutor
from perflab.platform.machine import Machine
from perflab.platform.topology import Topology
from perflab.report import export
from perflab.store import open_store
from perflab.studies.run import study as run_mod
from perflab.studies import run_study
from perflab.studies.run.study import Command, RunConfig

MACHINE = Machine(topology=Topology(cpus=(), cores=(), sockets=(), nodes=()), metadata={"hostname": "t"})


@pytest.fixture
def store(tmp_path):
    s = open_store(str(tmp_path / "r.db"))
    yield s
    s.close()


def _markdown(store, tmp_path, seconds: str) -> list[str]:
    cfg = RunConfig(commands=(Command(f"sleep {seconds}", ("sleep", seconds)),), runs=3)
    res = run_study(run_mod, cfg, store, MockExecutor(), machine=MACHINE)
    export.export_markdown(res, str(tmp_path / "e.md"))
    return (tmp_path / "e.md").read_text().splitlines()


def test_seconds_have_three_decimals(store, tmp_path):
    md = _markdown(store, tmp_path, "1.2345")
    assert md[0].startswith("| Command | Mean [s] | Min [s] | Max [s] | Relative |")
    assert md[2].startswith("| `sleep 1.2345` | 1.234 ± 0.000 | 1.234 | 1.234 | 1.00 | 1.234 [")


def test_milliseconds_have_one_decimal(store, tmp_path):
    md = _markdown(store, tmp_path, "0.01234")
    assert md[2].startswith("| `sleep 0.01234` | 12.3 ± 0.0 | 12.3 | 12.3 | 1.00 | 12.3 [")
