"""Measurement engine on real processes: rusage, exit codes, signals, timeout, pinning, metrics,
perf stat, the start barrier of concurrent copies (without a process: tests/unit/test_measure.py;
the MockExecutor: tests/studies/test_measure.py)."""

from __future__ import annotations

import os
import signal
import sys

import pytest

from perflab.errors import PerflabError
from perflab.measure import perfstat
from perflab.measure.executor import RealExecutor
from perflab.measure.metrics import compile_patterns
from perflab.model import RunSpec

PY = sys.executable


@pytest.fixture(scope="module")
def ex():
    e = RealExecutor()
    yield e
    e.close()


def py(code: str, **kw) -> RunSpec:
    return RunSpec(argv=(PY, "-S", "-c", code), **kw)


def test_exit_code_and_stderr_tail(ex):
    r = ex.run(py("import sys\nfor i in range(30): print('line', i, file=sys.stderr)\nsys.exit(3)"))
    assert r.exit_code == 3 and r.signal is None and not r.ok
    tail = r.stderr_tail.splitlines()
    assert len(tail) == 20 and tail[-1] == "line 29"


def test_success_keeps_no_tail(ex):
    r = ex.run(RunSpec(argv=("true",)))
    assert r.ok and r.exit_code == 0 and r.stderr_tail == ""
    assert r.wall_ns > 0 and r.end_ns - r.start_ns == r.wall_ns


def test_signal(ex):
    r = ex.run(RunSpec(argv=("sh", "-c", "kill -SEGV $$")))
    assert r.exit_code is None and r.signal == signal.SIGSEGV and not r.ok


def test_maxrss_of_50mb_child_and_small_child(ex):
    big = ex.run(py("b = bytearray(60 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1"))
    assert big.ok and big.maxrss_kb >= 50 * 1024
    assert big.minflt > 10000  # 60 MiB touched page by page
    # The trampoline keeps perflab's own (Python) memory out of a small child's peak RSS.
    small = ex.run(RunSpec(argv=("true",)))
    assert small.maxrss_kb < 8 * 1024


def test_user_time_of_busy_child(ex):
    r = ex.run(py("import time\nt = time.process_time()\nwhile time.process_time() - t < 0.2: pass"))
    assert r.ok and r.user_s + r.sys_s >= 0.15
    assert r.wall_ns >= 0.15e9


def test_timeout_kills_group(ex):
    r = ex.run(RunSpec(argv=("sh", "-c", "sleep 5; sleep 5"), timeout=0.3))
    assert r.timed_out and not r.ok and r.exit_code is None
    assert 0.25e9 <= r.wall_ns < 3e9


def test_pinning_seen_by_child(ex):
    cpu = max(os.sched_getaffinity(0))
    spec = py("import os; print(sorted(os.sched_getaffinity(0)))", cpus=(cpu,),
              metrics=compile_patterns([r"\[(?P<cpu>\d+)\]"]))
    r = ex.run(spec)
    assert r.ok and r.metrics == {"cpu": float(cpu)}
    assert os.sched_getaffinity(0) != {cpu} or len(os.sched_getaffinity(0)) == 1  # restored


def test_env_cwd_stdin(ex, tmp_path):
    (tmp_path / "in.txt").write_text("42\n")
    spec = py("import os,sys; print('v', os.environ['PL_X'], os.getcwd(), sys.stdin.read().strip())",
              env={"PL_X": "7"}, cwd=str(tmp_path), stdin=str(tmp_path / "in.txt"),
              metrics=compile_patterns([r"v (?P<x>\d+) \S+ (?P<inp>\d+)"]))
    r = ex.run(spec)
    assert r.metrics == {"x": 7.0, "inp": 42.0}
    assert os.getcwd() != str(tmp_path)


def test_shell_only_when_asked(ex):
    assert ex.run(RunSpec(argv=("echo hi | grep -q hi",), shell=True)).ok
    with pytest.raises(PerflabError, match="not found"):
        ex.run(RunSpec(argv=("echo hi | grep -q hi",)))


def test_command_not_found(ex):
    with pytest.raises(PerflabError, match="command 'no-such-cmd-xyz' not found: check the name or PATH"):
        ex.run(RunSpec(argv=("no-such-cmd-xyz",)))


def test_perf_stat_software_counters(ex, capsys):
    if perfstat.perf_binary() is None:
        pytest.skip("perf not installed")
    r = ex.run(RunSpec(argv=("true",), perf_events=()))
    assert r.ok and "task-clock" in r.counters and "page-faults" in r.counters
    r2 = ex.run(RunSpec(argv=("true",), perf_events=()))
    err = capsys.readouterr().err
    # at most one note about hardware counters per process, however many runs
    assert err.count("hardware counters") <= 1
    assert "task-clock" in r2.counters


@pytest.mark.parametrize("together", [True, False])
def test_run_concurrent(ex, together):
    specs = [py("import os; print(os.getpid())") for _ in range(3)]
    c = ex.run_concurrent(specs, together=together)
    assert len(c.results) == 3 and all(r.ok for r in c.results)
    assert c.start_spread_ns == max(c.starts_ns) - min(c.starts_ns) >= 0
    assert all(s >= c.release_ns for s in c.starts_ns)
    assert all(r.maxrss_kb > 1000 for r in c.results)


def test_barrier_holds_every_copy_until_release(ex):
    # release_ns is taken after the last copy was spawned: a copy that did not wait at the barrier
    # (spawned ~0.1 ms apart, six of them) would report a start before it.
    specs = [RunSpec(argv=("true",)) for _ in range(6)]
    for _ in range(5):
        c = ex.run_concurrent(specs, together=True)
        assert min(c.starts_ns) >= c.release_ns
        assert all(r.ok and r.start_ns == c.release_ns for r in c.results)


def test_concurrent_timeout(ex):
    c = ex.run_concurrent([RunSpec(argv=("sleep", "5"), timeout=0.3),
                           RunSpec(argv=("true",))])
    assert c.results[0].timed_out and c.results[1].ok


def test_command_runs_at_nice_zero_and_relative_cwd(ex, tmp_path, monkeypatch):
    # the spawn server's own priority must not leak into the measured command
    r = ex.run(RunSpec(argv=("sh", "-c", "cut -d' ' -f19 /proc/self/stat"),
                       metrics=compile_patterns([r"^(?P<nice>-?\d+)$"])))
    assert r.metrics == {"nice": 0.0}
    # a relative cwd / stdin is relative to perflab's cwd at run time, not the server's start
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.txt").write_text("5\n")
    monkeypatch.chdir(tmp_path)
    r = ex.run(RunSpec(argv=("cat",), cwd="d", stdin="d/x.txt",
                       metrics=compile_patterns([r"(?P<v>\d+)"])))
    assert r.ok and r.metrics == {"v": 5.0}


def test_mem_node_binds_through_numactl(ex):
    import shutil

    if shutil.which("numactl") is None:
        pytest.skip("numactl not installed")
    r = ex.run(RunSpec(argv=("numactl", "--show"), mem_node=0,
                       metrics=compile_patterns([r"membind: (?P<node>\d+)"])))
    assert r.ok and r.metrics == {"node": 0.0}


def test_environment_follows_os_environ_and_the_spec(ex, monkeypatch):
    # The spawn server keeps perflab's environment from its start; a change made since, and a
    # spec's own variables, still reach the command.
    show = py("import os; print(os.environ.get('PL_A'), os.environ.get('PL_B'))",
              metrics=compile_patterns([r"(?P<a>\S+) (?P<b>\S+)"]))
    r = ex.run(RunSpec(argv=show.argv, capture_output=True))
    assert r.ok
    monkeypatch.setenv("PL_A", "1")
    out, text = ex.capture(show)
    assert text.strip() == "1 None"
    _, text = ex.capture(RunSpec(argv=show.argv, env={"PL_B": "2"}))
    assert text.strip() == "1 2"
    monkeypatch.delenv("PL_A")
    _, text = ex.capture(RunSpec(argv=show.argv))
    assert text.strip() == "None None"


def test_real_runs_carry_their_health(ex):
    r = ex.run(RunSpec(argv=("true",)))
    assert isinstance(r.health, dict) and "runnable_others" in r.health  # /proc/loadavg is always there
    assert r.suspect == (r.health.get("cpu_pressure", 0) > 0.2 or r.health.get("steal", 0) > 0.02
                         or r.health.get("throttle", 0) > 0)
