"""instances ranks N copies by the total of a per-copy score declared higher is better (a
fixed-time benchmark's fps), not by copies/s and not by one copy's score; the table, the verdict
and the JSON name the rule."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from perflab.checks.instances import one_node_box
from perflab.measure.executor import MockExecutor
from perflab.model import MetricPattern, RunResult, Workload
from perflab.platform.machine import Machine
from perflab.report.terminal.instances import render
from perflab.store import open_store
from perflab.studies import run_study
from perflab.studies.instances import study as instances
from perflab.studies.instances.study import InstancesConfig


@pytest.fixture
def store(tmp_path):
    with open_store(str(tmp_path / "perflab.db")) as s:
        yield s


def _fixed_time(ex: MockExecutor, cpus: int):
    """Every copy runs 10 s whatever N; its fps falls once the copies share the CPUs."""
    def model(spec):
        n = spec.params["n"]
        wall = round(10e9)
        return RunResult(wall_ns=wall, user_s=10 * min(1.0, cpus / n), sys_s=0, maxrss_kb=1, minflt=0,
                         majflt=0, nvcsw=0, nivcsw=0, exit_code=0, start_ns=ex.clock_ns,
                         end_ns=ex.clock_ns + wall, metrics={"fps": 100.0 * min(1.0, cpus / n)})
    return model


def test_a_fixed_time_benchmark_is_ranked_by_its_total_score_over_the_copies(store):
    ex = MockExecutor()
    ex.model = _fixed_time(ex, cpus=2)
    wl = Workload("enc", ("enc",), metrics=(MetricPattern(r"(?P<fps>[\d.]+) fps"),),
                  primary_metric="fps", higher_is_better=True)
    res = run_study(instances, InstancesConfig(wl, ns=(1, 2, 3, 4), policies=("none",), reps=4), store, ex,
                    machine=Machine(topology=one_node_box(2), metadata={"hostname": "mock"}))
    (scan,) = res.scans
    # copies/s would be 0.1, 0.2, 0.3, 0.4 (4 copies best); one copy's fps 100, 100, 66.7, 50 (1 best)
    assert [p.throughput for p in scan.points] == pytest.approx([100, 200, 200, 200])
    assert [p.own_metric for p in scan.points] == pytest.approx([100, 100, 200 / 3, 50])
    assert res.optimum_n == 2 and res.unit == "total fps" and res.summed
    assert res.ranked_by.startswith("ranked by total fps over N copies, higher is better: the sum of each copy's fps")
    con = Console(record=True, width=400)
    render(res, con, "enc")
    text = con.export_text()
    # the title wraps at the table's width
    assert "machine throughput [total fps] = the sum of the copies' fps" in " ".join(text.split())
    assert "ranked by total fps over N copies" in text and "never summed" not in text
    assert "the machine throughput is its sum over the copies" in text
    assert res.verdict().startswith("N = 2,") and "200 total fps" in res.verdict()
    data = json.loads(json.dumps(res.as_dict()))
    assert data["unit"] == "total fps" and data["ranked_by"] == res.ranked_by and data["optimum_n"] == 2
