"""Back-to-back runs and their journal (measure/journal.py, Session.run_many), with real
processes: what the server journals before the next run starts is what a kill -9 of perflab
leaves to recover; a failed run ends a batch; the server dies with perflab."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from perflab.measure import journal as run_journal
from perflab.measure.executor import RealExecutor
from perflab.errors import PerflabError
from perflab.model import RunSpec
from perflab.store import open_store
from perflab.store.lite import open_fast
from perflab.studies.session import Session, journalled_runs, recover_journals

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _store(tmp_path: Path) -> str:
    db = str(tmp_path / "j.db")
    open_store(db).close()  # created at the current schema: perflab run then writes through sqlite3
    return db


def test_a_batch_stores_every_run_with_its_health_and_leaves_no_journal(tmp_path):
    db = _store(tmp_path)
    with open_fast(db) as store, RealExecutor() as ex:
        camp = store.start_campaign("run", {})
        session = Session(ex, store, camp)
        results = list(session.run_many(RunSpec(argv=("true",), label="t"), 0, 40))
        assert len(results) == 40 and all(r.ok for r in results)
        assert len(run_journal.orphans(db)) == 0 and len(list(tmp_path.glob("j.db.perflab-runs-*"))) == 1
        session.close()
    assert not list(tmp_path.glob("j.db.perflab-runs-*"))  # empty (all stored): removed
    with open_store(db) as store:
        ms = store.measurements(camp)
    assert [m.rep for m in ms] == list(range(40))
    # health read by the server right after each run: the interval since the previous one
    assert all("runnable_others" in m.result.health for m in ms)
    assert sum("cpu_pressure" in m.result.health for m in ms) >= 39
    starts = [m.result.start_ns for m in ms]
    assert starts == sorted(starts)


def test_a_failed_run_ends_the_batch_and_keeps_its_output(tmp_path):
    db = _store(tmp_path)
    counter = tmp_path / "n"
    counter.write_text("0")
    # fails on its 3rd and 6th runs, saying which on stderr
    c = shlex.quote(str(counter))  # the shell reads it: a TMPDIR may hold a space
    script = (f'n=$(( $(cat {c}) + 1 )); echo $n > {c}; '
              'if [ $((n % 3)) -eq 0 ]; then echo "bad run $n" >&2; exit 3; fi')
    with open_fast(db) as store, RealExecutor() as ex:
        camp = store.start_campaign("run", {})
        session = Session(ex, store, camp)
        results = list(session.run_many(RunSpec(argv=(script,), shell=True, label="s"), 0, 8))
        session.close()
    assert [r.ok for r in results] == [True, True, False, True, True, False, True, True]
    assert results[2].exit_code == 3 and "bad run 3" in results[2].stderr_tail
    assert "bad run 6" in results[5].stderr_tail
    assert counter.read_text().strip() == "8"  # no run repeated, none skipped


SCRIPT = textwrap.dedent("""
    import os, shlex, signal, sys
    from perflab.measure.executor import RealExecutor
    from perflab.model import RunSpec
    from perflab.store.lite import open_fast
    from perflab.studies.session import Session

    db, log, stop_after = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = open_fast(db)
    camp = store.start_campaign("run", {})
    session = Session(RealExecutor(), store, camp)
    real_add = store.add_measurements
    seen = 0

    def lagging(campaign_id, runs):
        # the store stops keeping up: what the server journalled is all there is
        global seen
        seen += len(runs)
        if seen <= stop_after:
            real_add(campaign_id, runs)

    store.add_measurements = lagging
    spec = RunSpec(argv=(f"echo x >> {shlex.quote(str(log))}; sleep 0.01",), shell=True, label="k")
    for i, _ in enumerate(session.run_many(spec, 0, 200)):
        if seen > stop_after + 8:
            with open(log + ".children", "w") as fh:  # the spawn server, for the test to wait on
                fh.write(" ".join(open(f"/proc/self/task/{t}/children").read()
                                  for t in os.listdir("/proc/self/task")))
            os.kill(os.getpid(), signal.SIGKILL)
""")


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_kill_9_mid_batch_loses_at_most_the_run_in_flight(tmp_path):
    db, log = _store(tmp_path), tmp_path / "runs.log"
    proc = subprocess.run([sys.executable, "-c", SCRIPT, db, str(log), "5"], timeout=60,
                          env={**os.environ, "PYTHONPATH": SRC})
    assert proc.returncode == -signal.SIGKILL
    # The server gets SIGTERM with its parent's death and kills its command: wait until it is
    # gone (a fixed 0.2 s could end first on a loaded machine), then nothing can run on.
    children = [int(pid) for pid in Path(f"{log}.children").read_text().split()]
    assert children, "perflab had no spawn server"
    deadline = time.monotonic() + 60
    while not all(map(_gone, children)):
        assert time.monotonic() < deadline, "the spawn server outlived perflab by 60 s"
        time.sleep(0.02)
    executed = len(log.read_text().splitlines())
    assert executed < 200  # the batch stopped with perflab, far short of its end
    with open_store(db) as store:
        camp = store.campaigns()[-1]
        in_store = len(store.measurements(camp.id))
        assert in_store <= 6  # the store lagged on purpose
        waiting = journalled_runs(store)
    # a listing says what only the journal holds, and changes nothing
    for args in (("results",), ("results", str(camp.id))):
        listed = subprocess.run([sys.executable, "-m", "perflab", *args, "--db", db], capture_output=True,
                                text=True, timeout=60, env={**os.environ, "PYTHONPATH": SRC})
        assert listed.returncode == 0, listed.stderr
        runs = "run" if waiting[camp.id] == 1 else "runs"
        assert (f"campaign {camp.id} has {waiting[camp.id]} more measured {runs} in the journal"
                in listed.stdout), listed.stdout
        assert f"'perflab resume {camp.id}' stores them" in listed.stdout
    report = subprocess.run([sys.executable, "-m", "perflab", "report", str(camp.id), "--db", db, "-o",
                             str(tmp_path / "r.md")], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": SRC})
    assert report.returncode == 0, report.stderr
    assert f"warning: campaign {camp.id} has {waiting[camp.id]} more measured r" in report.stderr
    with open_store(db) as store:
        assert len(store.measurements(camp.id)) == in_store and journalled_runs(store) == waiting
        added = recover_journals(store)
        assert journalled_runs(store) == {}
        ms = store.measurements(camp.id)
    assert added == len(ms) - in_store == waiting[camp.id] > 0
    assert sorted(m.rep for m in ms) == list(range(len(ms)))  # no gap, none twice
    assert executed in (len(ms), len(ms) + 1)  # at most the run in flight is lost
    assert not list(tmp_path.glob("j.db.perflab-runs-*"))


def test_a_live_writers_journal_is_not_an_orphan_and_a_torn_line_is_skipped(tmp_path):
    db = str(tmp_path / "o.db")
    live = run_journal.Journal.beside(db)
    assert live is not None and run_journal.orphans(db) == []  # locked by this process
    good = ("R 100 200 0 10 20 1000 5 0 1 2 0\tcpu  1 2 3 4 5 6 7 8 0 0\t\t0.00 0.00 0.00 1/100 5")
    tag = run_journal.Journal.tag(7, "cmd", {"a": 1}, 4, ())
    with open(live.path, "a") as fh:
        fh.write(f"{tag}\t0\t{good}\n{tag}\t1\t{good}\n{tag}\t2\tR 300 4")  # the last one torn
    os.close(live.fd)  # as if its perflab died: the lock goes with the fd
    assert run_journal.orphans(db) == [live.path]
    runs = run_journal.read(live.path)
    assert [(r.campaign_id, r.label, r.params, r.rep) for r in runs] == [(7, "cmd", {"a": 1}, 4),
                                                                         (7, "cmd", {"a": 1}, 5)]
    assert runs[0].result.wall_ns == 100 and runs[0].result.user_s == pytest.approx(1e-5)
    assert runs[1].result.health["runnable_others"] == 0


def test_recovery_skips_a_deleted_campaign_and_runs_already_stored(tmp_path):
    db = _store(tmp_path)
    with open_store(db) as store:
        camp = store.start_campaign("run", {})
    journal = run_journal.Journal.beside(db)
    line = "R 100 200 0 10 20 1000 5 0 1 2 0"
    with open(journal.path, "a") as fh:
        fh.write(f"{run_journal.Journal.tag(camp, 'x', {}, 0, ())}\t0\t{line}\n")
        fh.write(f"{run_journal.Journal.tag(camp, 'x', {}, 0, ())}\t1\t{line}\n")
        fh.write(f"{run_journal.Journal.tag(camp + 99, 'x', {}, 0, ())}\t0\t{line}\n")
    os.close(journal.fd)
    with open_store(db) as store:
        first = run_journal.read(journal.path)[0]
        store.add_measurement(camp, first.result, {}, rep=0, label="x")
        assert recover_journals(store) == 1  # rep 1 only: rep 0 was stored, campaign+99 is gone
        assert sorted(m.rep for m in store.measurements(camp)) == [0, 1]


def test_the_server_finds_a_command_on_path_as_execvp_does(tmp_path, monkeypatch):
    # The server searches PATH once per request; an empty entry is the current directory,
    # a directory named like the command is skipped, and a missing command is still one line.
    (tmp_path / "here").mkdir()
    (tmp_path / "here" / "tool").write_text("#!/bin/sh\necho from-cwd\n")
    (tmp_path / "here" / "tool").chmod(0o755)
    (tmp_path / "dir" / "tool").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "here")
    monkeypatch.setenv("PATH", f"{tmp_path / 'dir'}::/usr/bin:/bin")
    with RealExecutor() as ex:
        result, output = ex.capture(RunSpec(argv=("tool",), label="tool"))
        assert result.ok and output.strip() == "from-cwd"
        with pytest.raises(PerflabError, match="command 'no-such-tool' not found"):
            ex.run(RunSpec(argv=("no-such-tool",)))
