"""A campaign knows the perflab that holds it open: `results` says 'died' for one a killed perflab
left running, and `resume` will not run a campaign beside the perflab still measuring it."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from perflab.platform import owner
from perflab.platform.sysfs import Root
from perflab.store import open_store

SRC = str(Path(__file__).resolve().parents[2] / "src")
BOOT = "0b5e0d7c-3f6e-4c1a-9d8e-2a1b3c4d5e6f"


def _proc(tmp_path: Path, pid: int, comm: str, start: int) -> Root:
    """A /proc with a boot id and one process whose name has a space and parentheses in it."""
    (tmp_path / "proc/sys/kernel/random").mkdir(parents=True, exist_ok=True)
    (tmp_path / "proc/sys/kernel/random/boot_id").write_text(BOOT + "\n")
    (tmp_path / f"proc/{pid}").mkdir(parents=True, exist_ok=True)
    rest = ["S", "1", str(pid), str(pid), "0", "-1", "4194560"] + ["0"] * 12 + [str(start), "1000"]
    (tmp_path / f"proc/{pid}/stat").write_text(f"{pid} ({comm}) " + " ".join(rest) + "\n")
    return Root(str(tmp_path))


def test_owner_is_alive_only_while_that_very_process_runs(tmp_path):
    root = _proc(tmp_path, 4242, "perf lab) (x", 987654)
    me = owner.identity(root, pid=4242)
    assert me == {"host": os.uname().nodename, "boot": BOOT, "pid": 4242, "start": 987654}
    assert owner.alive(me, root) is True
    assert owner.alive({**me, "start": 987655}, root) is False  # the pid was reused since
    assert owner.alive({**me, "pid": 4243}, root) is False  # no such process
    assert owner.alive({**me, "boot": "another boot"}, root) is False  # this host restarted
    assert owner.alive({**me, "boot": "another boot", "host": "elsewhere"}, root) is None
    assert owner.alive(None, root) is None and owner.alive({"pid": 4242}, root) is None
    assert owner.identity(Root(str(tmp_path / "none"))) == {}  # no /proc: no owner recorded
    assert owner.alive(owner.identity()) is True  # this very process, on the live /proc


def _perflab(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "perflab", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": SRC})
    assert not check or proc.returncode == 0, proc.stderr
    return proc


def _listed(db: str) -> dict:
    return {r["id"]: r for r in json.loads(_perflab("results", "--db", db, "--json", "-").stdout)}


def _held_command(tmp_path: Path) -> tuple[list[str], Path]:
    """A command whose first run ends at once and whose later runs wait until the test creates
    the release file: the campaign stays live for as long as the test needs, however fast or
    slow the machine (a fixed number of short sleeps could all end before the test looked)."""
    first, release = tmp_path / "first", tmp_path / "release"
    # the shell reads the paths: a TMPDIR may hold a space
    script = (f"mkdir {shlex.quote(str(first))} 2>/dev/null || "
              f"while [ ! -e {shlex.quote(str(release))} ]; do sleep 0.01; done")
    return ["sh", "-c", script], release


def test_a_killed_perflabs_campaign_shows_died_and_a_live_one_is_not_resumed(tmp_path):
    db = str(tmp_path / "s.db")
    open_store(db).close()
    command, release = _held_command(tmp_path)
    live = subprocess.Popen([sys.executable, "-m", "perflab", "run", "--db", db, "--runs", "40",
                             "--warmup", "0", "--energy", "off", "--", *command],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": SRC})
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with open_store(db) as store:
                camps = store.campaigns()
                if camps and store.measurements(camps[-1].id):
                    break
            time.sleep(0.1)
        cid = camps[-1].id
        row = _listed(db)[cid]
        assert (row["status"], row["owner_alive"], row["owner_pid"]) == ("running", True, live.pid)
        # resuming it would measure the same runs twice, beside the perflab measuring them
        refused = _perflab("resume", str(cid), "--db", db, check=False)
        assert refused.returncode == 2 and refused.stdout == ""
        assert refused.stderr.strip().splitlines() == [
            f"perflab: error: campaign {cid} (run) is still being measured by perflab pid {live.pid}; "
            f"wait for it, or stop it (kill {live.pid}: it closes as interrupted) and resume then"]
        nothing = _perflab("resume", "--db", db, check=False)  # the newest unfinished is taken
        assert nothing.returncode == 2 and "no interrupted campaign" in nothing.stderr
    finally:
        live.send_signal(signal.SIGKILL)
        live.wait()  # reaped: its /proc entry is gone
        release.touch()  # the held run (orphaned by the kill) ends; resume's runs pass at once
    row = _listed(db)[cid]
    assert (row["status"], row["owner_alive"]) == ("running", False)
    table = _perflab("results", "--db", db).stdout
    assert "died" in table and f"'perflab resume {cid}' finishes it" in table
    one = _perflab("results", str(cid), "--db", db).stdout
    assert f"campaign {cid}: run, died," in one
    _perflab("report", str(cid), "--db", db, "-o", str(tmp_path / "r.md"))
    md = " ".join((tmp_path / "r.md").read_text().split())  # Markdown prose is wrapped at 80
    assert f"campaign status: died (its perflab was gone before it closed the campaign); results are " \
           f"partial: 'perflab resume {cid}' finishes it" in md
    _perflab("resume", "--db", db)  # no id: the died campaign is the one to finish
    row = _listed(db)[cid]
    assert (row["status"], row["measurements"], row["owner_alive"]) == ("done", 40, None)
    assert "died" not in _perflab("results", "--db", db).stdout


def test_a_died_campaign_the_listing_leaves_out_is_still_named(tmp_path):
    # `results` shows the newest campaigns only (--last); the one a killed perflab left running is
    # what `resume` is for, so its note is printed even where its row is not.
    db = str(tmp_path / "s.db")
    with open_store(db) as store:
        gone = {**owner.identity(), "boot": "a boot before this one"}  # this host, restarted since
        died = store.start_campaign("run", {}, labels={"owner": gone})
        for _ in range(3):
            store.finish_campaign(store.start_campaign("run", {}), summary={"verdict": "ok"})
    out = _perflab("results", "--db", db, "--last", "2").stdout
    assert f"│ {died} │" not in out and "2 older ones are not shown" in out
    assert f"note: campaign {died} is marked running" in out and f"'perflab resume {died}' finishes it" in out
    assert out.count("note: campaign") == 1
