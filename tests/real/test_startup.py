"""What `perflab run` loads before it measures, and the collector's start-up state: the
start-up budget kept without timing anything (bench/startup.sh does the timing).

Each module named here cost milliseconds of every start when it was on the run's path; a change
that puts one back fails here, with the module named."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from perflab.startup import sha256, which
from perflab.store import open_store

SRC = str(Path(__file__).resolve().parents[2] / "src")

# Runs `python -m perflab ARGS` in this process and reports, after the command, which modules
# were loaded and what the collector looks like.
PROBE = """
import gc, json, runpy, sys
out, sys.argv = sys.argv[1], ["perflab", *sys.argv[2:]]
try:
    runpy.run_module("perflab", run_name="__main__", alter_sys=True)
finally:
    with open(out, "w") as fh:
        json.dump({"modules": sorted(sys.modules), "threshold": gc.get_threshold(),
                   "frozen": gc.get_freeze_count(), "enabled": gc.isenabled()}, fh)
"""

# Not needed to run a command and store it in an existing SQLite file; each is loaded on demand
# (the full store on a new file, the build cache on a new compiler, the gate with --baseline...).
NOT_ON_THE_RUN_PATH = (
    "sqlalchemy", "numpy", "scipy", "matplotlib", "jinja2",
    "perflab.store.db", "perflab.store.baselines", "perflab.kernels.build", "perflab.kernels.abi",
    "perflab.report.export", "perflab.studies.gate.study", "perflab.workloads",
    "perflab.stats.comparison", "perflab.stats.bootstrap", "perflab.store.rows",
    "pathlib", "subprocess", "tempfile", "csv", "zipfile",
    "shutil", "bz2", "lzma", "hashlib", "_hashlib",  # startup.which and startup.sha256 instead
    # the cached capture is recorded as stored (platform/machine.py); the rest is its reader's
    "perflab.platform.topology_types", "perflab.platform.topology", "perflab.platform.probes",
    "perflab.platform.host", "perflab.stats.sample",
)


def _probe(tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "probe.json"
    env = {**os.environ, "PYTHONPATH": SRC}
    proc = subprocess.run([sys.executable, "-c", PROBE, str(out), *args], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


def test_run_loads_only_what_it_needs_and_restores_the_collector(tmp_path):
    db = str(tmp_path / "s.db")
    open_store(db).close()  # an existing store at the current schema, as after the first run
    args = ("run", "--db", db, "--runs", "1", "--energy", "off", "--", "true")
    _probe(tmp_path, *args)  # fills the per-boot machine cache and the helper's quick path
    seen = _probe(tmp_path, *args)
    loaded = [m for m in NOT_ON_THE_RUN_PATH if m in seen["modules"]]
    assert not loaded, f"perflab run --runs 1 loaded {loaded}: load them where they are needed"
    # start-up's objects frozen once the run began, the default thresholds back for the rest
    assert seen["enabled"] and seen["frozen"] > 10_000
    assert seen["threshold"][0] < 100_000


def test_a_first_run_with_a_new_store_loads_no_more(tmp_path):
    # A store that does not exist yet is created with its schema through sqlite3 (store/lite.py):
    # SQLAlchemy and the migrations cost a new user's first run ~110 ms.
    args = ("run", "--runs", "1", "--energy", "off", "--", "true")
    _probe(tmp_path, "run", "--db", str(tmp_path / "warm.db"), *args[1:])  # the per-boot cache
    seen = _probe(tmp_path, "run", "--db", str(tmp_path / "new.db"), *args[1:])
    loaded = [m for m in NOT_ON_THE_RUN_PATH if m in seen["modules"]]
    assert not loaded, f"perflab run with a new store loaded {loaded}"


def test_a_command_that_never_ends_its_start_up_keeps_collecting(tmp_path):
    # A command that never ends its start-up (machine, here) still collects: the first
    # threshold is large, never off.
    seen = _probe(tmp_path, "machine", "--json")
    assert seen["enabled"] and seen["threshold"][0] == 100_000 and seen["frozen"] == 0


def test_one_command_or_two_with_few_runs_are_analysed_without_numpy(tmp_path):
    # One command's analysis (median CI, quartiles, modified Z-score outliers) and two commands'
    # ratio with few runs each (Hodges-Lehmann and Moses' interval, stats/shift.py) are the
    # standard library's: numpy's import was 55 ms of every such `perflab run` here. With more
    # pairs of runs than the exact loops are quick for, the ratio loads numpy.
    db = str(tmp_path / "s.db")
    open_store(db).close()
    one = _probe(tmp_path, "run", "--db", db, "--runs", "5", "--energy", "off", "--", "true")
    assert "numpy" not in one["modules"]
    two = _probe(tmp_path, "run", "--db", db, "--runs", "10", "--energy", "off", "true", "sleep 0")
    if "numpy" in two["modules"]:
        # Allowed only where a sample was noisy (a loaded machine): such a sample is tested for
        # two speeds (stats.modes), which needs numpy. A quiet one never is.
        from perflab.studies.run.compare import two_speeds_tested

        with open_store(db) as store:
            cid = max(c.id for c in store.campaigns())
            by_label: dict[str, list[float]] = {}
            for m in store.measurements(cid):
                by_label.setdefault(m.label, []).append(m.result.wall_ns / 1e9)
        assert any(two_speeds_tested(v) for v in by_label.values()), "numpy loaded for quiet samples"
    many = _probe(tmp_path, "run", "--db", db, "--runs", "21", "--energy", "off", "true", "sleep 0")
    assert "numpy" in many["modules"]


def test_which_answers_as_shutil_which(tmp_path, monkeypatch):
    import shutil

    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
    (a / "tool").write_text("#!/bin/sh\n")
    (a / "tool").chmod(0o644)  # not executable: skipped, as shutil skips it
    (b / "tool").write_text("#!/bin/sh\n")
    (b / "tool").chmod(0o755)
    (a / "dirtool").mkdir()  # a directory is not a tool
    (b / "first").write_text("")
    (b / "first").chmod(0o755)
    paths = [f"{a}:{b}", f"{b}:{a}", f"{a}:{a}:{b}", "", f"{a}", f"::{b}", os.environ["PATH"]]
    names = ["tool", "dirtool", "first", "sh", "nonexistent", str(b / "tool"), str(a / "tool"),
             "./tool"]
    for path in paths:
        for name in names:
            assert which(name, path=path) == shutil.which(name, path=path), (name, path)
    monkeypatch.setenv("PATH", f"{a}:{b}")
    assert which("tool") == shutil.which("tool") == str(b / "tool")
    monkeypatch.delenv("PATH")
    assert which("sh") == shutil.which("sh")


def test_sha256_digests_as_hashlib():
    import hashlib

    for data in (b"", b"abc", bytes(range(256)) * 1000):
        assert sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    h, g = sha256(), hashlib.sha256()
    for part in (b"x", b"\0", "host\n".encode()):
        h.update(part)
        g.update(part)
    assert h.hexdigest() == g.hexdigest()
