"""perflab cost through its command line: the seed example's choice, power asked of a campaign
without energy."""

from __future__ import annotations

import subprocess
import sys
from importlib import resources

import pytest

from perflab.errors import PerflabError
from perflab.store import open_store
from perflab.studies.cost.study import load_platforms, run_cost
from tests.studies.test_cost import _instances_campaign, _platforms


def test_seed_example_picks_e5_2630(tmp_path):
    path = resources.files("perflab") / "examples" / "trigger-farm-platforms.toml"
    plot = tmp_path / "cost.svg"
    out = subprocess.run([sys.executable, "-m", "perflab", "cost", str(path), "--db", str(tmp_path / "s.db"),
                          "--plot", str(plot)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "best: E5-2630 v3" in out.stdout
    assert plot.read_text().lstrip().startswith(("<?xml", "<svg")) and "envelope" in plot.read_text()


def test_power_from_campaign_without_energy_is_one_line(tmp_path):
    with open_store(str(tmp_path / "s.db")) as store:
        cid = _instances_campaign(store, None)
        toml = _platforms(tmp_path, f"""
[[platform]]
name = "x"
sockets = 1
tdp_w = 100
prices = {{ board = 1 }}
throughput_per_node = 40
power_from_campaign = {cid}
""")
        with pytest.raises(PerflabError, match="measured no energy at its optimum"):
            run_cost(load_platforms(str(toml)), store)
    p = subprocess.run([sys.executable, "-m", "perflab", "cost", str(toml), "--db", str(tmp_path / "s.db")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "measured no energy" in p.stderr
