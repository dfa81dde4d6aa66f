"""`perflab machine` names the energy source `--energy auto` would use, per RAPL domain whether it
reads, or why there is none: on fixture /sys trees (a topology snapshot with a powercap tree)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from perflab.measure.energy import choose_meter, describe_sources
from perflab.platform.show import machine_info, render
from perflab.platform.sysfs import Root
from tests.conftest import shared_tmp

ENERGY = Path(__file__).parents[1] / "data" / "energy"
TOPOLOGY = "64amd64-4s2n4ca2co"


@pytest.fixture
def machine_tree(topology_root):
    """energy name or None -> a Root holding a topology snapshot plus that powercap tree."""
    made: list[str] = []

    def make(energy: str | None) -> Root:
        # mkdtemp where others can enter, opened to all: the unreadable case reads it as another
        # user (nobody).
        top = tempfile.mkdtemp(prefix="perflab-energy-", dir=shared_tmp())
        os.chmod(top, 0o755)
        made.append(top)
        dest = os.path.join(top, "tree")
        shutil.copytree(topology_root(TOPOLOGY).path, dest, symlinks=True)
        if energy is not None:
            shutil.copytree(ENERGY / energy / "sys" / "class" / "powercap",
                            os.path.join(dest, "sys", "class", "powercap"))
        return Root(dest)

    yield make
    for top in made:
        shutil.rmtree(top, ignore_errors=True)


def perflab(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perflab", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "COLUMNS": "100"})


def test_readable_rapl_is_what_auto_uses(machine_tree):
    root = machine_tree("intel-2s")
    p = perflab("machine", "--root", root.path, "--json")
    assert p.returncode == 0, p.stderr
    energy = json.loads(p.stdout)["energy"]
    assert energy["auto"]["source"] == "rapl"
    assert energy["auto"]["note"] == choose_meter("auto", root)[1]  # the same decision, not a copy
    assert [(d["key"], d["zone"], d["readable"]) for d in energy["rapl"]["domains"]] == [
        ("package-0", "intel-rapl:0", True), ("package-0/dram", "intel-rapl:0:0", True),
        ("package-1", "intel-rapl:1", True), ("package-1/dram", "intel-rapl:1:0", True)]
    text = perflab("machine", "--root", root.path).stdout
    auto = next(line for line in text.splitlines() if "--energy auto" in line)
    assert "│ yes" in auto and "RAPL: package-0" in auto
    dram = next(line for line in text.splitlines() if "RAPL package-1/dram" in line)
    assert "│ yes" in dram and "intel-rapl:1:0 energy_uj, wraps at 65,713 J" in dram


def test_no_rapl_says_why(machine_tree):
    root = machine_tree(None)
    p = perflab("machine", "--root", root.path, "--json")
    assert p.returncode == 0, p.stderr
    energy = json.loads(p.stdout)["energy"]
    assert energy["auto"]["source"] is None and energy["auto"]["note"].startswith("energy: not measured:")
    assert energy["rapl"] == {"domains": [], "reason": "no RAPL energy counters in /sys/class/powercap "
                              "(virtual machine, or the intel_rapl driver not loaded)"}
    assert "power/energy-* events" in energy["perf"]["reason"] or "perf not installed" in energy["perf"]["reason"]
    text = perflab("machine", "--root", root.path).stdout
    assert "--energy auto" in text and "not measured" in text and "intel_rapl driver" in text


def test_root_only_counters_are_named_unreadable(machine_tree):
    # Since the PLATYPUS fix the kernel makes energy_uj 0400 root: a user sees the zones but
    # cannot read them. Read here as nobody (the test runs as root on the project's VMs).
    root = machine_tree("intel-2s")
    was = os.geteuid()
    for zone in ("intel-rapl:0", "intel-rapl:1:0"):
        # Without root the files are the test user's own: mode 0 keeps that user out as the
        # kernel's 0400 root keeps a user out.
        os.chmod(root.join(f"sys/class/powercap/{zone}/energy_uj"), 0o400 if was == 0 else 0)
    if was == 0:
        os.seteuid(65534)
    try:
        energy = describe_sources(root)
        info = machine_info(root, energy=energy)
    finally:
        if was == 0:
            os.seteuid(0)
    readable = {d["key"]: d["readable"] for d in energy["rapl"]["domains"]}
    assert readable == {"package-0": False, "package-0/dram": True, "package-1": True, "package-1/dram": False}
    unreadable = [d for d in energy["rapl"]["domains"] if not d["readable"]]
    assert all(d["reason"].startswith("permission denied: energy_uj is root-only") for d in unreadable)
    assert energy["auto"]["source"] is None and "cannot read" in energy["auto"]["note"]

    from rich.console import Console

    console = Console(record=True, width=100, file=open(os.devnull, "w"))
    render(info, console)
    text = console.export_text()
    row = next(line for line in text.splitlines() if "RAPL package-0 " in line)
    assert "│ no" in row and "intel-rapl:0 permission denied" in row
