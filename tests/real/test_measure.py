"""Measurement engine on real processes: rusage, exit codes, signals, timeout, pinning, metrics,
perf stat, the start barrier of concurrent copies; and the deterministic MockExecutor."""

from __future__ import annotations

import os
import signal
import sys

import pytest

from perflab.errors import PerflabError
from perflab.measure import perfstat
from perflab.measure.executor import MockExecutor, RealExecutor, check_cpus
from perflab.measure.metrics import compile_patterns, extract
from perflab.model import RunSpec
from perflab.platform.sysfs import Root

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


def test_metrics_last_match_wins_and_streams():
    pats = compile_patterns([r"(?P<events>[\d,]+) events", r"stderr:rate (?P<rate>[\d.]+)"])
    m = extract(pats, "10 events\n1,234 events\nrate 9\n", "rate 2.5\n")
    assert m == {"events": 1234.0, "rate": 2.5}


@pytest.mark.parametrize("bad,msg", [("(?P<x>[0-9", "does not compile"), (r"\d+", "no named group")])
def test_bad_regex(bad, msg):
    with pytest.raises(PerflabError, match=msg):
        compile_patterns([bad])


def test_check_cpus(tmp_path):
    allowed = sorted(os.sched_getaffinity(0))
    assert check_cpus(",".join(map(str, allowed))) == tuple(allowed)
    with pytest.raises(PerflabError, match="offline"):
        check_cpus("4095")
    with pytest.raises(PerflabError, match="malformed"):
        check_cpus("a-b")
    # a fixture root where CPU 1 is offline
    d = tmp_path / "sys/devices/system/cpu"
    d.mkdir(parents=True)
    (d / "online").write_text("0,2-3\n")
    with pytest.raises(PerflabError, match="CPU 1 is offline"):
        check_cpus("0-1", root=Root(str(tmp_path)))


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


def test_perf_parse_not_supported():
    text = ("# started\n\n0.52,msec,task-clock,520000,100.00,0.5,CPUs utilized\n"
            "<not supported>,,cycles,0,100.00,,\n3,,page-faults,520000,100.00,5.7,K/sec\n")
    counters, unsupported = perfstat.parse(text)
    assert counters == {"task-clock": 0.52, "page-faults": 3.0}
    assert unsupported == ["cycles"]


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


# --- MockExecutor -------------------------------------------------------------------------
def test_mock_sleep_is_exact():
    m = MockExecutor()
    r = m.run(RunSpec(argv=("sleep", "0.123")))
    assert r.wall_ns == 123_000_000 and r.user_s == pytest.approx(0.9 * 0.123)
    assert r.start_ns == 0 and r.end_ns == 123_000_000 and m.now_ns() == 123_000_000
    assert m.run(RunSpec(argv=("sleep 0.5",), shell=True)).wall_ns == 500_000_000
    assert m.run(RunSpec(argv=("false",))).exit_code == 1
    assert len(m.calls) == 3


def test_mock_model():
    m = MockExecutor(model=lambda spec: float(spec.params["n"]) / 10)
    r = m.run(RunSpec(argv=("x",), params={"n": 3}))
    assert r.wall_ns == 300_000_000
    c = m.run_concurrent([RunSpec(argv=("x",), params={"n": k}) for k in (1, 2)])
    assert [x.wall_ns for x in c.results] == [100_000_000, 200_000_000] and c.start_spread_ns == 0


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


def test_mock_capture_plays_output():
    ex = MockExecutor(output=lambda spec: "event 3\n")
    res, text = ex.capture(RunSpec(argv=("sleep", "0.5")))
    assert res.wall_ns == 500_000_000 and text == "event 3\n"


def _health_tree(tmp_path, steal=0, psi=0, runnable=1, freq=2000000, throttle=0, no_turbo=0, idle=1000):
    def put(rel, text):
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)

    put("proc/stat", f"cpu  100 0 50 {idle} 0 0 0 {steal} 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n")
    put("proc/pressure/cpu", f"some avg10=0.00 avg60=0.00 avg300=0.00 total={psi}\n"
                             "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
    put("proc/loadavg", f"0.10 0.20 0.30 {runnable}/120 999\n")
    for cpu in (0, 1):
        base = f"sys/devices/system/cpu/cpu{cpu}"
        put(f"{base}/cpufreq/scaling_cur_freq", f"{freq}\n")
        put(f"{base}/cpufreq/scaling_governor", "performance\n")
        put(f"{base}/thermal_throttle/core_throttle_count", f"{throttle}\n")
        put(f"{base}/thermal_throttle/package_throttle_count", "0\n")
    put("sys/devices/system/cpu/intel_pstate/no_turbo", f"{no_turbo}\n")


def test_health_on_a_fixture_tree(tmp_path):
    import time

    from perflab.measure.health import HealthProbe

    _health_tree(tmp_path)
    probe = HealthProbe(Root(str(tmp_path)))
    assert (probe.governor, probe.turbo) == ("performance", True)
    time.sleep(0.01)
    health, suspect = probe.sample((0,))
    assert not suspect and health["runnable_others"] == 0 and health["freq_mhz"] == {0: 2000}
    assert health["cpu_pressure"] == 0 and health["governor"] == "performance" and health["turbo"] is True
    # a quiet run: 10 ms of pressure in >= 1 s would be 1 %; here another task waited 50 ms of ~20 ms
    _health_tree(tmp_path, psi=50_000, runnable=3, freq=1200000)
    time.sleep(0.02)
    health, suspect = probe.sample((0,))
    assert suspect and health["cpu_pressure"] > 0.2 and health["runnable_others"] == 2
    assert health["freq_mhz"] == {0: 1200}
    # hypervisor steal: 30 of 1180 jiffies since the last sample is 2.5 %
    _health_tree(tmp_path, psi=50_000, steal=30, idle=2150)
    time.sleep(0.2)
    health, suspect = probe.sample((0,))
    assert health["steal"] == round(30 / 1180, 4) and suspect and health["cpu_pressure"] == 0
    # a thermal throttle event on the run's CPU
    _health_tree(tmp_path, psi=50_000, steal=30, idle=2150, throttle=2)
    health, suspect = probe.sample((0,))
    assert health["throttle"] == 2 and suspect
    probe.close()


def test_health_where_the_machine_tells_little(tmp_path):
    from perflab.measure.health import HealthProbe

    (tmp_path / "proc").mkdir()
    probe = HealthProbe(Root(str(tmp_path)))  # no /proc files, no cpufreq: nothing to say
    assert probe.sample((0, 1)) == ({}, False)
    assert (probe.governor, probe.turbo) == (None, None)


def test_real_runs_carry_their_health(ex):
    r = ex.run(RunSpec(argv=("true",)))
    assert isinstance(r.health, dict) and "runnable_others" in r.health  # /proc/loadavg is always there
    assert r.suspect == (r.health.get("cpu_pressure", 0) > 0.2 or r.health.get("steal", 0) > 0.02
                         or r.health.get("throttle", 0) > 0)
