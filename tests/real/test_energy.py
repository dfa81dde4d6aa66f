"""Energy meters on real processes: ipmitool (a stand-in script) sampled while a real process runs."""

from __future__ import annotations

import shlex

from perflab.measure.energy import IpmiMeter, trapezoid_joules
from tests.unit.test_energy import DATA, _fake_ipmitool


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
