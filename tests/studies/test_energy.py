"""Energy arithmetic through the mock executor: joules per event and the energy-optimal copies of
run and instances."""

from __future__ import annotations

import pytest

from perflab.measure.executor import MockExecutor
from perflab.model import RunResult, RunSpec
from perflab.store import open_store
from perflab.studies.cost.energy import energy_optimal, summarise
from perflab.studies.session import Session


class ModelMeter:
    """A modelled power curve: watts as a function of the copies running (turbo: fewer is cheaper)."""

    source = "model"

    def __init__(self, executor: MockExecutor, watts) -> None:
        self.executor, self.watts, self.copies = executor, watts, 1

    def start(self) -> None:
        self.t0 = self.executor.clock_ns

    def stop(self) -> dict[str, float]:
        return {"ipmi:node": self.watts(self.copies) * (self.executor.clock_ns - self.t0) / 1e9}


def test_joules_per_event_and_energy_optimal_copies_through_the_mock(tmp_path):
    ex = MockExecutor(model=lambda spec: 2.0)  # every run 2 s, 100 events
    meter = ModelMeter(ex, lambda n: 100.0 + 30.0 * n)
    with open_store(str(tmp_path / "s.db")) as store:
        cid = store.start_campaign("run", {})
        session = Session(ex, store, cid, energy=meter)
        results = []
        for rep in range(5):
            r = session.run(RunSpec(argv=("w",), label="w"), rep=rep)
            r.metrics["events"] = 100.0
            results.append(r)
        stored = [m.result for m in store.measurements(cid)]
    assert all(r.energy == {"ipmi:node": pytest.approx(260.0)} for r in stored)
    s = summarise(results, "events")
    assert s.joules_per_run_median == pytest.approx(260.0) and s.watts == pytest.approx(130.0)
    assert s.joules_per_event_median == pytest.approx(2.6) and s.joules_per_run.level == pytest.approx(0.9375)
    assert "node meter" in s.source
    # throughput scales to 4 copies then saturates; watts keep rising: fewest J/event at 4, and
    # with a steep turbo price (8 copies faster but dearer) energy and speed disagree
    points = {n: (min(n, 4) * 50.0, 100.0 + 30.0 * n) for n in (1, 2, 4, 8)}
    assert energy_optimal(points) == 4
    turbo = {2: (100.0, 160.0), 4: (190.0, 260.0), 8: (200.0, 420.0)}
    assert energy_optimal(turbo) == 4 and max(turbo, key=lambda n: turbo[n][0]) == 8


def test_instances_watts_and_energy_optimal_copies_through_the_mock(tmp_path):
    """A modelled node: throughput saturates at 4 CPUs while watts keep rising with copies, and a
    'turbo' makes 2 copies cheap per event; the study reports watts per N and the energy optimum."""
    from rich.console import Console

    from perflab.checks.instances import one_node_box
    from perflab.model import MetricPattern, Workload
    from perflab.platform.machine import Machine
    from perflab.report.terminal.instances import render
    from perflab.studies import run_study
    from perflab.studies.instances import study as instances

    ex = MockExecutor()

    def model(spec):
        n = int(spec.params["n"])
        wall = 1.0 * max(1.0, n / 4)
        return RunResult(wall_ns=int(wall * 1e9), user_s=wall, sys_s=0, maxrss_kb=1, minflt=0, majflt=0,
                         nvcsw=0, nivcsw=0, exit_code=0, start_ns=ex.clock_ns, end_ns=ex.clock_ns + int(wall * 1e9),
                         metrics={"events": 100.0})

    ex.model = model

    watts = {1: 120.0, 2: 140.0, 3: 230.0, 4: 300.0, 6: 310.0, 8: 320.0}

    class Meter:
        source = "model"

        def start(self):
            self.t0, self.c0 = ex.clock_ns, len(ex.calls)

        def stop(self):
            n = len(ex.calls) - self.c0
            return {"ipmi:node": watts[n] * (ex.clock_ns - self.t0) / 1e9}

    wl = Workload("sim", ("sim",), metrics=(MetricPattern(r"events: (?P<events>\d+)"),))
    # 5 rounds: with fewer than 4 the study names no optimum (no rank test can reach 0.05)
    cfg = instances.InstancesConfig(wl, ns=(1, 2, 3, 4, 6, 8), policies=("none",), reps=5)
    with open_store(str(tmp_path / "s.db")) as store:
        result = run_study(instances, cfg, store, ex, machine=Machine(one_node_box(4), {"hostname": "sim"}),
                           energy=Meter())
    pts = {p.n: p for p in result.scans[0].points}
    assert pts[2].watts == pytest.approx(140.0) and pts[8].watts == pytest.approx(320.0)
    assert pts[4].joules_per_unit == pytest.approx(300.0 / 4)  # no rate metric: the unit is a copy
    assert result.optimum_n in (4, 6, 8) and result.energy_optimum_n == 2  # 70 J per copy
    assert "node meter" in result.energy_source
    console = Console(width=200, record=True)
    render(result, console, "sim")
    text = console.export_text()
    assert "fewest joules per unit of work at N = 2" in text and "energy against copies" in text
