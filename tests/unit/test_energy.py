"""Energy sources on fixture trees and recorded outputs; the arithmetic through the mock."""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path

import pytest

from perflab.errors import PerflabError
from perflab.measure.energy import IpmiMeter, RaplMeter, choose_meter, trapezoid_joules
from perflab.measure.executor import MockExecutor
from perflab.model import RunResult, RunSpec
from perflab.platform.energy import parse_ipmi_dcmi, parse_perf_energy, rapl_available, rapl_delta_uj, rapl_domains
from perflab.platform.sysfs import Root
from perflab.store import open_store
from perflab.studies.cost.energy import energy_optimal, run_joules, summarise
from perflab.studies.session import Session

DATA = Path(__file__).parents[1] / "data" / "energy"


def _tree(tmp_path, name: str) -> Root:
    import shutil

    dest = tmp_path / name
    shutil.copytree(DATA / name, dest)
    return Root(str(dest))


def _set(root: Root, zone: str, uj: int) -> None:
    Path(root.join(f"sys/class/powercap/{zone}/energy_uj")).write_text(f"{uj}\n")


def test_rapl_domains_on_intel_and_amd_trees(tmp_path):
    intel = rapl_domains(_tree(tmp_path, "intel-2s"))
    assert [d.key for d in intel] == ["package-0", "package-0/dram", "package-1", "package-1/dram"]
    amd = rapl_domains(_tree(tmp_path, "amd-1s"))
    assert [d.key for d in amd] == ["package-0", "package-0/core"]
    assert rapl_available(Root(str(tmp_path / "nothing")))[0] is False


def test_rapl_meter_handles_the_wrap(tmp_path):
    root = _tree(tmp_path, "intel-2s")
    meter = RaplMeter(root)
    meter.start()
    _set(root, "intel-rapl:0", 71234567890 + 5_000_000)        # 5 J
    _set(root, "intel-rapl:0:0", 9876543210 + 1_000_000)        # 1 J
    _set(root, "intel-rapl:1", 2_000_000)                       # wrapped: 328850 uJ + 2 J
    _set(root, "intel-rapl:1:0", 1234567 + 500_000)
    joules = meter.stop()
    assert joules["rapl:package-0"] == pytest.approx(5.0)
    assert joules["rapl:package-1"] == pytest.approx(2.328850)
    assert rapl_delta_uj(10, 4, 12) == 6
    r = RunResult(wall_ns=10**9, user_s=0, sys_s=0, maxrss_kb=0, minflt=0, majflt=0, nvcsw=0, nivcsw=0,
                  exit_code=0, energy=joules)
    assert run_joules(r) == pytest.approx(5 + 1 + 2.32885 + 0.5)  # packages + DRAM, core not added
    assert meter.interval_s >= 1.0  # re-read well within half a wrap period


def test_rapl_missing_counter_is_one_line(tmp_path):
    root = _tree(tmp_path, "amd-1s")
    os.remove(root.join("sys/class/powercap/intel-rapl:0:0/max_energy_range_uj"))
    with pytest.raises(PerflabError, match="max_energy_range_uj is missing"):
        rapl_domains(root)
    root = _tree(tmp_path, "intel-2s")
    Path(root.join("sys/class/powercap/intel-rapl:1/energy_uj")).write_text("garbage\n")
    with pytest.raises(PerflabError, match="cannot read .*intel-rapl:1/energy_uj"):
        RaplMeter(root).start()
    with pytest.raises(PerflabError, match="--energy rapl"):
        choose_meter("rapl", root)


def test_ipmi_outputs_recorded_on_real_bmcs():
    assert parse_ipmi_dcmi((DATA / "ipmi-activated.txt").read_text()) == 215.0
    assert parse_ipmi_dcmi((DATA / "ipmi-deactivated.txt").read_text()) == 319.0
    with pytest.raises(PerflabError, match="deactivated"):
        parse_ipmi_dcmi((DATA / "ipmi-zero.txt").read_text())
    with pytest.raises(PerflabError, match="no power reading"):
        parse_ipmi_dcmi("Error: unable to establish IPMI v2 / RMCP+ session\n")


def _fake_ipmitool(tmp_path, body: str) -> tuple[str, ...]:
    exe = tmp_path / "ipmitool"
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return (str(exe), "dcmi", "power", "reading")


def test_ipmi_meter_samples_a_real_process(tmp_path):
    argv = _fake_ipmitool(tmp_path, f"cat {shlex.quote(str(DATA / 'ipmi-activated.txt'))}\n")
    import time

    meter = IpmiMeter(argv, period_s=0.05)
    t0 = time.monotonic()
    meter.start()
    t_started = time.monotonic()
    time.sleep(0.3)
    t_stop = time.monotonic()
    joules = meter.stop()["ipmi:node"]
    t1 = time.monotonic()
    # 215 W all along, read at start and at stop: bounded by the clock around each, however long
    # the machine takes to spawn the fake ipmitool (fixed bounds around 0.3 s race the machine)
    assert 215 * (t_stop - t_started) <= joules <= 215 * (t1 - t0)
    assert trapezoid_joules([(0, 100), (1, 200), (3, 200)]) == 550


def test_ipmi_failure_and_password_are_one_line(tmp_path):
    argv = _fake_ipmitool(tmp_path, "echo 'Password: Unable to get password' >&2; exit 1\n")
    with pytest.raises(PerflabError, match="status 1: .*asks for a password"):
        IpmiMeter(argv).read_watts()


def test_perf_energy_output():
    text = "3.52,Joules,power/energy-pkg/,1002170523,100.00,,\n0.81,Joules,power/energy-ram/,1002170523,100.00,,\n"
    assert parse_perf_energy(text) == {"energy-pkg": 3.52, "energy-ram": 0.81}


def test_absent_here_is_one_line_and_goes_on():
    meter, note = choose_meter("auto")
    if meter is None:
        assert note.startswith("energy: not measured:") and "\n" not in note
    assert choose_meter("off") == (None, "energy: not measured (--energy off)")
    with pytest.raises(PerflabError, match="unknown"):
        choose_meter("solar")


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
    from perflab.checks.instances import one_node_box
    from perflab.platform.machine import Machine
    from perflab.model import MetricPattern, Workload
    from perflab.report.terminal.instances import render
    from perflab.studies import run_study
    from perflab.studies.instances import study as instances
    from rich.console import Console

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


def test_instances_cli_says_once_that_energy_is_not_measured_here_where_asked(tmp_path):
    import subprocess
    import sys

    meter, note = choose_meter("auto")
    for asked in ((), ("--energy", "auto")):
        p = subprocess.run([sys.executable, "-m", "perflab", "instances", "--n", "1,2", "--reps", "1",
                            "--policy", "none", *asked, "--db", str(tmp_path / "s.db"), "--", "true"],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        if meter is None:
            # silent unless --energy was given: the note stood before every table on a VM
            assert p.stdout.count("energy: not measured") == (1 if asked else 0)
            assert "energy against copies" not in p.stdout


def test_rapl_on_trees_recorded_from_real_servers(tmp_path):
    # Zone numbers are not package numbers: on smp01 intel-rapl:0 is package-3, on smp04 package-1.
    # Keys come from each zone's name file, so a socket's energy is filed under its own package.
    smp01 = rapl_domains(_tree(tmp_path, "recorded-4s-smp01"))
    assert [d.key for d in smp01] == ["package-3", "package-3/dram", "package-2", "package-2/dram",
                                      "package-1", "package-1/dram", "package-0", "package-0/dram"]
    assert {d.max_range_uj for d in smp01 if "/" not in d.key} == {262143328850}
    assert {d.max_range_uj for d in smp01 if d.key.endswith("/dram")} == {65712999613}
    smp04 = rapl_domains(_tree(tmp_path, "recorded-2s-smp04"))
    assert [d.key for d in smp04] == ["package-1", "package-0"]
    jacob = rapl_domains(_tree(tmp_path, "recorded-4s-jacob"))
    assert len(jacob) == 12 and "package-2/core" in {d.key for d in jacob}
    assert rapl_available(_tree(tmp_path / "again", "recorded-4s-jacob"))[0] is True


def test_rapl_wrap_from_a_recorded_counter_near_its_end(tmp_path):
    # On "jacob", package-2's core counter was recorded 658.49 J short of its 65532.6 J range.
    root = _tree(tmp_path, "recorded-4s-jacob")
    meter = RaplMeter(root)
    meter.start()
    _set(root, "intel-rapl:2:0", 1_000_000)  # 1 J after the wrap
    _set(root, "intel-rapl:2", 10537557287 + 3_000_000)
    joules = meter.stop()
    assert joules["rapl:package-2/core"] == pytest.approx((65532610987 - 64874120580 + 1_000_000) / 1e6)
    assert joules["rapl:package-2"] == pytest.approx(3.0)
    assert joules["rapl:package-0"] == 0


def test_psys_is_not_added_to_the_packages():
    r = RunResult(wall_ns=10**9, user_s=0, sys_s=0, maxrss_kb=0, minflt=0, majflt=0, nvcsw=0, nivcsw=0,
                  exit_code=0, energy={"rapl:package-0": 4.0, "rapl:package-0/core": 3.0,
                                       "rapl:psys": 9.0, "rapl:package-0/dram": 1.0})
    assert run_joules(r) == pytest.approx(5.0)
