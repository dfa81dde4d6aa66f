"""perflab machine on fixture trees: JSON, text, a bad --root."""

from __future__ import annotations

import json

import pytest

from tests.real.test_machine import perflab


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


@pytest.mark.parametrize("bad", ["/nonexistent/perflab-root", "."])
def test_cli_machine_bad_root(bad):
    proc = perflab("machine", "--root", bad)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("perflab: error:") and "--root" in lines[0]
    assert "Traceback" not in proc.stderr
