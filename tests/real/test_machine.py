"""Machine metadata, feature probes and `perflab machine` on this machine (on fixture trees:
tests/unit/test_machine.py, tests/cli/test_machine.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from perflab.platform import probes
from perflab.platform.metadata import collect


def perflab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perflab", *args], capture_output=True, text=True,
                          timeout=120)


def test_metadata_live():
    md = collect()
    assert md["source"] == "live"
    assert md["kernel"]["release"] == os.uname().release
    assert md["thp"]["enabled"] in ("always", "madvise", "never")
    assert isinstance(md["perf_event_paranoid"], int)
    assert 0.0 <= md["steal"] <= 1.0
    assert len(md["loadavg"]) == 3
    if shutil.which("gcc"):
        assert "gcc" in md["compilers"]["gcc"].lower() or "12" in md["compilers"]["gcc"]
    json.dumps(md)  # JSON-able for the store's hosts table


def test_probes_agree_with_the_machine():
    perf = probes.perf_status()
    assert perf is probes.perf_status()  # cached per process
    if shutil.which("perf") is None:
        assert not perf.available and "install linux-perf" in perf.reason
        return
    direct = subprocess.run(["perf", "stat", "-e", "task-clock", "true"], capture_output=True)
    assert perf.available == (direct.returncode == 0)
    hw = probes.hw_counters()
    out = subprocess.run(["perf", "stat", "-x,", "-e", "cycles,instructions", "true"],
                         capture_output=True, text=True).stderr
    if "<not supported>" in out or "<not counted>" in out:
        assert not hw.available and hw.reason == probes.NO_HW_COUNTERS
    else:
        assert hw.available == perf.available


def test_abi_probes():
    from perflab.kernels import abi

    x32 = abi.x32_runnable()
    assert x32.reason in (abi.NO_X32_KERNEL, abi.NO_X32_LIBC, "builds and runs -mx32 binaries") \
        or x32.reason.startswith("cannot build -mx32")
    assert x32.available == (x32.reason == "builds and runs -mx32 binaries")
    m32 = abi.m32_buildable()
    assert "-m32" in m32.reason
    clang = probes.clang_available()
    assert clang.available == (shutil.which("clang") is not None)
    from perflab.platform.topology import read_topology

    numa = probes.numa_nodes()
    assert numa.value == len(read_topology().nodes)
    assert numa.available == (numa.value >= 2)


def test_abi_probe_names_match_the_probes():
    # A machine record is complete when it has every name in ABI_PROBE_NAMES (studies'
    # with_abi_probes checks it without importing kernels.abi): the two lists must agree.
    from perflab import kernels
    from perflab.kernels import abi

    assert tuple(abi.PROBES) == kernels.ABI_PROBE_NAMES


def test_cli_machine_live():
    proc = perflab("machine", "--json")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["topology"]["counts"]["threads"] == len(info["topology"]["cpus"]) >= 1
    assert info["topology"]["allowed"] == sorted(os.sched_getaffinity(0))
    assert set(info["probes"]) == {"perf", "hw_counters", "x32", "m32", "clang", "valgrind", "numa"}
    from perflab.measure.energy import choose_meter

    meter, note = choose_meter("auto")
    assert info["energy"]["auto"] == {"source": meter.source if meter else None, "note": note}
    text = perflab("machine")
    assert text.returncode == 0 and "probes" in text.stdout and "NUMA nodes" in text.stdout
    assert "--energy auto" in text.stdout
