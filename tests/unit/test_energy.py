"""Energy sources on fixture trees and recorded outputs (the arithmetic through the mock:
tests/studies/test_energy.py)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from perflab.errors import PerflabError
from perflab.measure.energy import IpmiMeter, RaplMeter, choose_meter
from perflab.model import RunResult
from perflab.platform.energy import parse_ipmi_dcmi, parse_perf_energy, rapl_available, rapl_delta_uj, rapl_domains
from perflab.platform.sysfs import Root
from perflab.studies.cost.energy import run_joules

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
