"""Real processes: a stripped binary profiled without markers; kill -9 mid-campaign, then resume."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import shutil
import time
from pathlib import Path

import pytest

from perflab.store import open_store

SRC = Path(__file__).parents[1] / "data" / "profile_events.c"
pytestmark = pytest.mark.skipif(shutil.which("perf") is None, reason="perf not installed")


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "perflab", *args]


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def test_stripped_binary_whole_run(tmp_path):
    exe = tmp_path / "ev-stripped"
    subprocess.run(["gcc", "-O2", "-s", "-o", str(exe), str(SRC)], check=True)
    out = subprocess.run(_cli("profile", "--db", str(tmp_path / "p.db"), "--out", str(tmp_path / "out"),
                              "--json", str(tmp_path / "r.json"), "--", str(exe), "3", "1", "20000000", "0"),
                         capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    assert out.returncode == 0, out.stderr
    import json

    res = json.loads((tmp_path / "r.json").read_text())["result"]
    assert res["whole_run"] and res["window"] == "whole run"
    assert res["unknown_share"] > 0.5 and "top:" not in res["verdict"]
    assert "in the whole run (no event markers" in res["verdict"]
    assert "have no symbol, so no top function can be named" in res["verdict"]
    assert "debug-symbol package" in res["symbol_hint"] and "ev-stripped" in res["symbol_hint"]
    assert "top functions of the whole run" in out.stdout
    # a whole run records from the exec: no fifo enable, so perf's start-up costs no samples
    assert res["recordings"][0]["enable_latency_us"] is None


def test_kill_9_then_resume(tmp_path):
    exe = tmp_path / "ev"
    subprocess.run(["gcc", "-O2", "-o", str(exe), str(SRC)], check=True)
    db, log, release = tmp_path / "p.db", tmp_path / "executions.log", tmp_path / "release"
    # The third recording waits for the release file, created after the kill: the campaign cannot
    # end before the test kills it, however fast the machine.
    q = {k: shlex.quote(str(v)) for k, v in (("log", log), ("release", release), ("exe", exe))}  # a TMPDIR may hold a space
    held = (f"n=$(wc -l < {q['log']} 2>/dev/null || echo 0); echo run >> {q['log']}; "
            f"[ $n -lt 2 ] || while [ ! -e {q['release']} ]; do sleep 0.01; done; exec {q['exe']} 3 1 10000000 100")
    proc = subprocess.Popen(
        _cli("profile", "--db", str(db), "--out", str(tmp_path / "out"), "--event", "1", "--repeat", "5",
             "--", "sh", "-c", held),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    store = open_store(str(db))
    deadline = time.monotonic() + 120
    stored: list = []
    while len(stored) < 2:
        assert proc.poll() is None and time.monotonic() < deadline, "the study ended before 2 recordings"
        time.sleep(0.05)
        try:
            stored = store.measurements(1) if store.campaigns() else []
        except Exception:  # the CLI may still be creating the schema
            stored = []
    os.killpg(proc.pid, signal.SIGKILL)  # perflab dies: nothing finishes the campaign
    proc.wait()
    release.touch()
    # perf and the workload run in their own session: let the orphaned recording end by itself
    while any(str(exe) in _cmdline(p) for p in os.listdir("/proc") if p.isdigit()):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    before = store.measurements(1)
    assert store.campaign(1).status == "running" and len(before) == 2
    out = subprocess.run(_cli("resume", "1", "--db", str(db), "--json", str(tmp_path / "r.json")),
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "recording 1/5 was stored: not recorded again" in out.stdout
    import json

    res = json.loads((tmp_path / "r.json").read_text())["result"]
    after = store.measurements(1)
    assert store.campaign(1).status == "done"
    assert [m.rep for m in after] == [0, 1, 2, 3, 4]  # none repeated, none lost
    assert [m.id for m in after[: len(before)]] == [m.id for m in before]
    assert [m.result.health for m in after[: len(before)]] == [m.result.health for m in before]
    assert res["window_opened"] and len(res["recordings"]) == 5 and res["top"][0]["symbol"] == "hot_kernel"
    perf_data = [a.path for a in store.artifacts(1) if a.kind == "perf.data"]
    assert len(perf_data) == 5 and all(os.path.exists(p) for p in perf_data)


def test_perf_missing_one_line_before_the_store(tmp_path):
    (tmp_path / "bin").mkdir()
    out = subprocess.run(_cli("profile", "--db", str(tmp_path / "p.db"), "--event", "3", "--", "/bin/true"),
                         capture_output=True, text=True, env={**os.environ, "PATH": str(tmp_path / "bin")})
    assert out.returncode == 2
    assert out.stderr == ("perflab: error: perf is not installed: install linux-perf (Debian) or "
                          "linux-tools-$(uname -r) (Ubuntu)\n")
    assert not (tmp_path / "p.db").exists()
