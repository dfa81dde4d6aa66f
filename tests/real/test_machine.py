"""Machine metadata, feature probes and `perflab machine`, on fixture trees and on this machine."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from perflab.platform import metadata, probes
from perflab.platform.metadata import collect
from perflab.platform.sysfs import Root

HYBRID = "20em64t-hybrid-1p6c2t+2ca4co1t"


def perflab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perflab", *args], capture_output=True, text=True,
                          timeout=120)


def test_metadata_on_fixture_tree_reads_only_the_tree(topology_root):
    md = collect(topology_root(HYBRID))
    assert md["cpu_model"] == "13th Gen Intel(R) Core(TM) i7-1370P"
    assert (md["vendor"], md["family"], md["model"], md["stepping"]) == ("GenuineIntel", 6, 186, 2)
    assert md["microcode"] == "0x4119"
    assert md["flags"]["avx2"] and not md["flags"]["avx512f"] and not md["flags"]["hypervisor"]
    assert md["governors"] == {"powersave": list(range(20))}
    assert md["kernel"]["release"] == "6.1.0-13-amd64"
    assert md["hostname"] == "vesubie"
    assert md["virtualisation"] is None
    # nothing from the live machine leaks into a tree's metadata
    assert md["compilers"] == {} and md["perf_version"] is None and md["steal"] is None
    assert md["mem_total_bytes"] and md["mem_total_bytes"] != collect()["mem_total_bytes"]


def test_metadata_other_trees(topology_root):
    md = collect(topology_root("memorysidecaches"))
    assert md["kernel"]["release"] == "5.3.0-rc7" and md["hostname"] == "leonide"
    old = collect(topology_root("16em64t-4s2c2t-offlines"))
    assert old["cpu_model"] == "Intel(R) Xeon(TM) CPU 2.60GHz" and old["family"] == 15


def test_steal_and_choice_parsing(tmp_path):
    (tmp_path / "proc").mkdir()
    # user nice system idle iowait irq softirq steal guest guest_nice: steal 10 of 100
    (tmp_path / "proc" / "stat").write_text("cpu  10 0 10 70 0 0 0 10 5 0\ncpu0 10 0 10 70 0 0 0 10 5 0\n")
    md = collect(Root(str(tmp_path)))
    assert md["steal_since_boot"] == pytest.approx(0.1)
    assert metadata.steal_fraction(Root(str(tmp_path)), interval_s=0.0) == 0.0
    assert metadata._bracketed("always [madvise] never") == "madvise"
    assert metadata._bracketed(None) is None


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


def test_cli_machine_on_fixture_json(topology_root):
    root = topology_root("64amd64-4s2n4ca2co")
    proc = perflab("machine", "--root", root.path, "--json")
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["topology"]["counts"] == {"sockets": 4, "cores": 64, "threads": 64, "numa_nodes": 8,
                                          "l3_groups": 8}
    assert "probes" not in info  # no live probes on a snapshot
    assert info["metadata"]["cpu_model"].startswith("AMD Opteron(TM) Processor 6276")
    assert info["topology"]["distances"]["0,3"] == 22


def test_cli_machine_text_on_fixture(topology_root):
    proc = perflab("machine", "--root", topology_root("offline-cpu0-node0").path)
    assert proc.returncode == 0, proc.stderr
    assert "2 socket(s), 17 cores, 17 threads, 1 NUMA node(s)" in proc.stdout
    assert "0-3,21-23" in proc.stdout  # offline CPUs


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


@pytest.mark.parametrize("bad", ["/nonexistent/perflab-root", "."])
def test_cli_machine_bad_root(bad):
    proc = perflab("machine", "--root", bad)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("perflab: error:") and "--root" in lines[0]
    assert "Traceback" not in proc.stderr
