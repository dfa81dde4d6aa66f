"""The measurement engine without a process: metric patterns, perf stat's output parsed, CPU lists
checked against the allowed set and a fixture tree, and the health probe on fixture trees."""

from __future__ import annotations

import os

import pytest

from perflab.errors import PerflabError
from perflab.measure import perfstat
from perflab.measure.executor import check_cpus
from perflab.measure.metrics import compile_patterns, extract
from perflab.platform.sysfs import Root


def test_metrics_last_match_wins_and_streams():
    pats = compile_patterns([r"(?P<events>[\d,]+) events", r"stderr:rate (?P<rate>[\d.]+)"])
    m = extract(pats, "10 events\n1,234 events\nrate 9\n", "rate 2.5\n")
    assert m == {"events": 1234.0, "rate": 2.5}


@pytest.mark.parametrize("bad,msg", [("(?P<x>[0-9", "does not compile"), (r"\d+", "no named group")])
def test_bad_regex(bad, msg):
    with pytest.raises(PerflabError, match=msg):
        compile_patterns([bad])


def test_check_cpus(tmp_path):
    allowed = sorted(os.sched_getaffinity(0))
    assert check_cpus(",".join(map(str, allowed))) == tuple(allowed)
    with pytest.raises(PerflabError, match="offline"):
        check_cpus("4095")
    with pytest.raises(PerflabError, match="malformed"):
        check_cpus("a-b")
    # a fixture root where CPU 1 is offline
    d = tmp_path / "sys/devices/system/cpu"
    d.mkdir(parents=True)
    (d / "online").write_text("0,2-3\n")
    with pytest.raises(PerflabError, match="CPU 1 is offline"):
        check_cpus("0-1", root=Root(str(tmp_path)))


def test_perf_parse_not_supported():
    text = ("# started\n\n0.52,msec,task-clock,520000,100.00,0.5,CPUs utilized\n"
            "<not supported>,,cycles,0,100.00,,\n3,,page-faults,520000,100.00,5.7,K/sec\n")
    counters, unsupported = perfstat.parse(text)
    assert counters == {"task-clock": 0.52, "page-faults": 3.0}
    assert unsupported == ["cycles"]


def _health_tree(tmp_path, steal=0, psi=0, runnable=1, freq=2000000, throttle=0, no_turbo=0, idle=1000):
    def put(rel, text):
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)

    put("proc/stat", f"cpu  100 0 50 {idle} 0 0 0 {steal} 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n")
    put("proc/pressure/cpu", f"some avg10=0.00 avg60=0.00 avg300=0.00 total={psi}\n"
                             "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
    put("proc/loadavg", f"0.10 0.20 0.30 {runnable}/120 999\n")
    for cpu in (0, 1):
        base = f"sys/devices/system/cpu/cpu{cpu}"
        put(f"{base}/cpufreq/scaling_cur_freq", f"{freq}\n")
        put(f"{base}/cpufreq/scaling_governor", "performance\n")
        put(f"{base}/thermal_throttle/core_throttle_count", f"{throttle}\n")
        put(f"{base}/thermal_throttle/package_throttle_count", "0\n")
    put("sys/devices/system/cpu/intel_pstate/no_turbo", f"{no_turbo}\n")


def test_health_on_a_fixture_tree(tmp_path):
    import time

    from perflab.measure.health import HealthProbe

    _health_tree(tmp_path)
    probe = HealthProbe(Root(str(tmp_path)))
    assert (probe.governor, probe.turbo) == ("performance", True)
    time.sleep(0.01)
    health, suspect = probe.sample((0,))
    assert not suspect and health["runnable_others"] == 0 and health["freq_mhz"] == {0: 2000}
    assert health["cpu_pressure"] == 0 and health["governor"] == "performance" and health["turbo"] is True
    # a quiet run: 10 ms of pressure in >= 1 s would be 1 %; here another task waited 50 ms of ~20 ms
    _health_tree(tmp_path, psi=50_000, runnable=3, freq=1200000)
    time.sleep(0.02)
    health, suspect = probe.sample((0,))
    assert suspect and health["cpu_pressure"] > 0.2 and health["runnable_others"] == 2
    assert health["freq_mhz"] == {0: 1200}
    # hypervisor steal: 30 of 1180 jiffies since the last sample is 2.5 %
    _health_tree(tmp_path, psi=50_000, steal=30, idle=2150)
    time.sleep(0.2)
    health, suspect = probe.sample((0,))
    assert health["steal"] == round(30 / 1180, 4) and suspect and health["cpu_pressure"] == 0
    # a thermal throttle event on the run's CPU
    _health_tree(tmp_path, psi=50_000, steal=30, idle=2150, throttle=2)
    health, suspect = probe.sample((0,))
    assert health["throttle"] == 2 and suspect
    probe.close()


def test_health_where_the_machine_tells_little(tmp_path):
    from perflab.measure.health import HealthProbe

    (tmp_path / "proc").mkdir()
    probe = HealthProbe(Root(str(tmp_path)))  # no /proc files, no cpufreq: nothing to say
    assert probe.sample((0, 1)) == ({}, False)
    assert (probe.governor, probe.turbo) == (None, None)
