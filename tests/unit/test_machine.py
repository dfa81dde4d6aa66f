"""Machine metadata read from fixture trees only, and steal and choice parsing."""

from __future__ import annotations

import pytest

from perflab.platform import metadata
from perflab.platform.metadata import collect
from perflab.platform.sysfs import Root

HYBRID = "20em64t-hybrid-1p6c2t+2ca4co1t"


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
