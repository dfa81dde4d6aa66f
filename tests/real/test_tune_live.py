"""Real `perflab machine tune` / `reset` on this machine (root only): ASLR, perf's sample rate and
the cpuset written and read back, then restored byte for byte; a tuned study killed with kill -9,
then restored by reset; and without root, one line and exit 2.

Tuning changes the whole machine (other processes move to the other CPUs), so each test is
short and resets in a finally block, and the fixture checks that nothing is left tuned.
"""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from perflab.platform import cpuset
from perflab.platform.tune import state as tune_state
from perflab.platform.sysfs import Root
from perflab.platform.tune.reset import reset
from tests.conftest import _stored_runs, shared_tmp

ASLR, RATE = "proc/sys/kernel/randomize_va_space", "proc/sys/kernel/perf_event_max_sample_rate"
LIVE = Root("/")

pytestmark = [pytest.mark.serial, pytest.mark.skipif(os.geteuid() != 0 or not os.access("/proc/sys/kernel/randomize_va_space", os.W_OK),
                                reason="changes the live machine: needs root")]


def _raw(rel: str) -> bytes:
    with open("/" + rel, "rb") as fh:
        return fh.read()


def _ours() -> list[str]:
    kind, mount = cpuset.find(LIVE)
    if kind is None:
        return []
    return [d for d in (cpuset.BENCH, cpuset.SYSTEM) if os.path.isdir(f"{mount}/{d}")]


@pytest.fixture
def untouched(tmp_path, monkeypatch):
    """The values before the test (ASLR, sample rate, every IRQ's affinity); afterwards every one
    reads byte for byte as before and no perflab cpuset is left."""
    monkeypatch.setenv("PERFLAB_STATE_DIR", str(tmp_path / "state"))
    assert not _ours(), "a perflab cpuset exists before the test: run 'perflab machine reset'"
    irqs = [f"proc/irq/{n}/smp_affinity_list" for n in LIVE.listdir("proc/irq", r"\d+")]
    before = {rel: _raw(rel) for rel in (ASLR, RATE, "proc/irq/default_smp_affinity", *irqs)}
    try:
        yield before
    finally:
        if tune_state.load() is not None:
            reset()
        assert {rel: _raw(rel) for rel in before} == before
        assert not _ours()


def perflab(*args: str, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "perflab", *args], capture_output=True, text=True,
                          timeout=120, env=env or os.environ.copy(), **kw)


def test_tune_then_reset_restores_aslr_sample_rate_and_cpuset(untouched, tmp_path):
    untouched_dir = tmp_path
    kind, mount = cpuset.find(LIVE)
    only = "aslr,perf_rate" + (",cpuset" if kind else "")
    try:
        tuned = perflab("machine", "tune", "--only", only)
        assert tuned.returncode == 0, tuned.stderr
        assert _raw(ASLR) == b"0\n" and _raw(RATE) == b"1\n"
        if kind:
            assert LIVE.read(f"{mount}/{cpuset.BENCH}/cpuset.cpus") == "1"
            assert str(os.getpid()) in LIVE.read(f"{mount}/{cpuset.SYSTEM}/cgroup.procs").split()
            assert os.sched_getaffinity(0) == {0}  # this test process moved off CPU 1
        shown = tune_state.machine_state()
        assert shown["tuned"] and shown["knobs"]["aslr"] == "0"
        if kind:
            # a study without --tune on the tuned machine runs in perflab.bench, and records so
            db = str(untouched_dir / "s.db")
            ran = perflab("run", "--runs", "2", "--energy", "off", "--db", db, "--", "true")
            assert ran.returncode == 0 and "this study and its runs are in perflab.bench (CPU 1)" in " ".join(ran.stdout.split())
            assert "cpuset /perflab.bench" in perflab("results", "--db", db, "1").stdout
    finally:
        out = perflab("machine", "reset")
    assert out.returncode == 0, out.stdout + out.stderr
    assert _raw(ASLR) == untouched[ASLR] and _raw(RATE) == untouched[RATE]
    assert not _ours() and tune_state.load() is None
    if kind:
        assert os.sched_getaffinity(0) == set(LIVE.read_cpulist("sys/devices/system/cpu/online"))


def _wait(cond, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError("timed out")
        time.sleep(0.1)


def test_kill_9_in_a_tuned_study_then_reset_restores(untouched, tmp_path):
    kind, mount = cpuset.find(LIVE)
    if kind is None:
        pytest.skip("no cpuset controller here")
    db = str(tmp_path / "s.db")
    proc = subprocess.Popen([sys.executable, "-m", "perflab", "run", "--tune", "--runs", "500", "--energy", "off",
                             "--db", db, "--", "sleep", "0.05"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        bench = f"{mount}/{cpuset.BENCH}/cgroup.procs"
        _wait(lambda: str(proc.pid) in (LIVE.read(bench) or "").split())
        _wait(lambda: _stored_runs(pathlib.Path(db)) >= 3)  # in the middle: runs stored, more to come
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert _raw(ASLR) == b"0\n"  # killed: nothing restored it
        later = perflab("results", "--db", db)
        assert "this machine is still tuned by 'perflab run --tune'" in later.stderr
        assert "'perflab machine reset' restores it" in later.stderr
        camp = perflab("results", "--db", db, "1")
        assert "machine state: tuned by perflab" in camp.stdout and "cpuset /perflab.bench" in camp.stdout
        shown = perflab("machine")
        assert "tuned by perflab since" in shown.stdout and "'perflab run --tune'" in shown.stdout
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        out = perflab("machine", "reset")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "cpuset" in out.stdout and "aslr" in out.stdout
    assert _raw(ASLR) == untouched[ASLR] and _raw(RATE) == untouched[RATE]
    assert not _ours() and tune_state.load() is None


NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def _readable_perflab():
    """(interpreter, directory) that user 65534 can run `python -m perflab` from: a copy of perflab
    and the packages its `machine tune` imports, in a directory everyone can enter. A checkout under
    a home of mode 700 (root's natural /root/perflab) is out of that user's reach, and so is a venv
    or a Python built under it; None (with why) where no interpreter is within reach."""
    import shutil
    import tempfile

    import click
    import rich

    import perflab

    base = shared_tmp()
    for python in dict.fromkeys([sys.executable, getattr(sys, "_base_executable", ""), "/usr/bin/python3"]):
        if not python or not os.path.exists(python):
            continue
        probe = subprocess.run([*NOBODY, python, "-s", "-c", "import sys; print(sys.version_info >= (3, 11))"],
                               capture_output=True, text=True, timeout=60, cwd=base)
        if probe.returncode == 0 and probe.stdout.strip() == "True":
            break
    else:
        return None, f"no Python 3.11+ that user 65534 can run ({sys.executable} is under a directory it cannot enter)"
    site = pathlib.Path(tempfile.mkdtemp(prefix="perflab-nobody-", dir=base))
    for mod in (perflab, click, rich):
        shutil.copytree(pathlib.Path(mod.__file__).parent, site / mod.__name__,
                        ignore=shutil.ignore_patterns("__pycache__"))
    for p in [site, *site.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    return python, site


def test_without_root_one_line_and_exit_2(tmp_path):
    import shutil

    python, site = _readable_perflab()
    if python is None:
        pytest.skip(f"cannot run perflab as user 65534 here: {site}")
    env = {**os.environ, "PERFLAB_STATE_DIR": str(tmp_path / "state"), "HOME": str(site), "PYTHONPATH": str(site)}
    try:
        out = subprocess.run([*NOBODY, python, "-s", "-m", "perflab", "machine", "tune"], capture_output=True,
                             text=True, timeout=60, env=env, cwd=site)
        assert out.returncode == 2, out.stderr
        assert out.stderr.strip().splitlines() == [
            "perflab: error: perflab machine tune writes /proc/sys, /sys and cgroups: run it as root (sudo "
            "perflab machine tune); --dry-run shows what it would change"]
        assert not (tmp_path / "state").exists()  # refused before anything was recorded or written
        dry = subprocess.run([*NOBODY, python, "-s", "-m", "perflab", "machine", "tune", "--dry-run", "--only",
                              "aslr"], capture_output=True, text=True, timeout=60, env=env, cwd=site)
    finally:
        shutil.rmtree(site, ignore_errors=True)
    assert dry.returncode == 0 and "would set" in dry.stdout, dry.stderr
