"""perflab instances: exact throughput, optimum and fork verdict through the MockExecutor; snapshot
of the terminal output (real minihlt and sleep runs, kill -9 and resume: tests/real/test_instances.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from rich.console import Console

from perflab.errors import PerflabError
from perflab.measure.executor import MockExecutor
from perflab.model import MetricPattern, RunResult, Workload
from perflab.platform.machine import Machine
from perflab.platform.topology import Core, Cpu, Node, Topology
from perflab.report.terminal.instances import render, sparkline
from perflab.store import open_store
from perflab.studies import run_study
from perflab.studies.instances import study as instances
from perflab.studies.instances.result import point_throughput
from perflab.studies.instances.study import InstancesConfig, InstancesResult, default_ns
from perflab.checks.instances import two_node_topology, verdict_check
from perflab.studies.instances.result import sign_test

SNAPSHOTS = Path(__file__).parents[1] / "snapshots"


def one_node_box(ncpu: int = 2) -> Topology:
    cpus = tuple(Cpu(c, c, 0, 0, (c,)) for c in range(ncpu))
    cores = tuple(Core(c, 0, 0, (c,)) for c in range(ncpu))
    return Topology(cpus, cores, (0,), (Node(0, tuple(range(ncpu))),))


def machine(topology: Topology) -> Machine:
    return Machine(topology=topology, metadata={"hostname": "mock"})


@pytest.fixture
def store(tmp_path):
    with open_store(str(tmp_path / "perflab.db")) as s:
        yield s


def result(wall_s: float, start_ns: int, metrics: dict | None = None, exit_code: int = 0) -> RunResult:
    wall = round(wall_s * 1e9)
    return RunResult(wall_ns=wall, user_s=wall_s, sys_s=0, maxrss_kb=1, minflt=0, majflt=0, nvcsw=0,
                     nivcsw=0, exit_code=exit_code, start_ns=start_ns, end_ns=start_ns + wall,
                     metrics=metrics or {})


# copies/s = N / makespan: 1, 2, 2.13, 2.14 for N = 1..4
WALL = {1: 1.0, 2: 1.0, 3: 3 / 2.13, 4: 4 / 2.14}


def test_mock_throughput_gain_optimum_and_stored_copies(store):
    ex = MockExecutor(lambda spec: WALL[spec.params["n"]])
    cfg = InstancesConfig(Workload("mock", ("work",)), ns=(1, 2, 3, 4), policies=("none", "compact"), reps=3)
    res = run_study(instances, cfg, store, ex, machine=machine(one_node_box()))
    assert res.unit == "copies/s"
    for scan in res.scans:
        assert [p.throughput for p in scan.points] == pytest.approx([1.0, 2.0, 2.13, 2.14])
        gains = [p.gain_per_copy for p in scan.points]
        assert gains[0] is None and gains[1:] == pytest.approx([1.0, 0.13, 0.01])
        assert [p.per_copy for p in scan.points] == pytest.approx([1.0, 1.0, 0.71, 0.535])
        # 3 rounds: no test of one N against another can reach 0.05, so no optimum is named
        assert (scan.optimum_n, scan.top_n, scan.within_1pct_n) == (None, 4, 3)
        assert scan.reason.startswith("not enough evidence: 3 rounds per point")
        assert scan.points[0].ci.level == pytest.approx(0.75)  # 3 rounds: min..max is a 75 % interval
    assert any("3 rounds per point: too few to test" in n for n in res.notes)
    assert not res.failed and "not an answer" in res.verdict()
    assert len(ex.calls) == 3 * 2 * (1 + 2 + 3 + 4)
    compact4 = [s.cpus for s in ex.calls if s.params.get("policy") == "compact" and s.params["n"] == 4][:4]
    assert compact4 == [(0,), (1,), (0,), (1,)]
    stored = store.measurements(res.campaign_id)
    assert len(stored) == len(ex.calls)
    # design keys only: the start barrier's spread lives in the run's health, not in its params
    assert {tuple(sorted(m.params)) for m in stored} == {("copy", "n", "policy", "round")}
    assert all("start_spread_ns" in m.result.health for m in stored)
    # the analysis is pure: the stored runs give the same result
    stored_res = instances.analyse(cfg, stored)
    assert [p.throughput for s in stored_res.scans for p in s.points] == \
        [p.throughput for s in res.scans for p in s.points]
    summary = store.campaign(res.campaign_id).summary
    again = InstancesResult.from_dict(json.loads(json.dumps(summary)))
    assert again.as_dict() == summary and again.scans[0].points[1].ci.level == pytest.approx(0.75)


def test_default_reps_give_a_90_percent_interval():
    assert InstancesConfig(Workload("m", ("x",))).reps == 5
    d = instances.design(InstancesConfig(Workload("m", ("x",)), ns=(1,)), one_node_box())
    assert not any("intervals" in n for n in d.notes)


def test_knee_where_throughput_saturates(store):
    # 4 CPUs: N copies take max(1, N/4) s, so copies/s = min(N, 4): a knee at N = 4
    ex = MockExecutor(lambda spec: max(1.0, spec.params["n"] / 4))
    cfg = InstancesConfig(Workload("mock", ("work",)), max_n=12, policies=("compact",), reps=4)
    res = run_study(instances, cfg, store, ex, machine=machine(one_node_box(4)))
    (scan,) = res.scans
    assert res.ns == [1, 2, 3, 4, 6, 8, 12]
    assert [p.throughput for p in scan.points] == pytest.approx([1, 2, 3, 4, 4, 4, 4])
    assert (scan.optimum_n, scan.within_1pct_n, scan.knee_n) == (4, 4, 4)


def test_cpu_time_metric_gains_nothing_past_the_cpu_count(store):
    """A per-copy CPU-time rate (seconds per move) summed over copies rewards
    oversubscription; machine throughput over the makespan must stop growing at 2 CPUs."""
    def model(spec):
        n = spec.params["n"]
        # 2 CPUs: each copy's wall time grows once copies exceed CPUs; its CPU time per move does not
        return result(max(1.0, n / 2), ex.clock_ns, {"spm": 0.5})

    ex = MockExecutor(model)
    wl = Workload("gnugo", ("gnugo",), metrics=(MetricPattern(r"(?P<spm>[\d.]+) spm"),),
                  primary_metric="spm", higher_is_better=False)
    res = run_study(instances, InstancesConfig(wl, ns=(1, 2, 3, 4, 6), policies=("none",), reps=3), store, ex,
                    machine=machine(one_node_box(2)))
    (scan,) = res.scans
    tp = [p.throughput for p in scan.points]
    assert tp == pytest.approx([1.0, 2.0, 2.0, 2.0, 2.0])
    assert scan.within_1pct_n == 2 and all(t <= tp[1] * 1.000001 for t in tp[2:])
    assert res.unit == "copies/s" and res.own_metric == "spm"
    assert [p.own_metric for p in scan.points] == pytest.approx([0.5] * 5)  # shown beside, not summed


def test_copies_that_do_not_overlap_do_not_add_up(store):
    """Short copies that run one after another are no faster together."""
    def model(spec):
        return result(1.0, ex.clock_ns + spec.params["copy"] * 10**9, {"events": 10.0, "events_per_s": 10.0})

    ex = MockExecutor(model)
    wl = Workload("m", ("m",), metrics=(MetricPattern(r"(?P<events>\d+) (?P<events_per_s>[\d.]+)"),),
                  primary_metric="events_per_s")
    res = run_study(instances, InstancesConfig(wl, ns=(1, 2, 4), policies=("none",), reps=1), store, ex,
                    machine=machine(one_node_box(4)))
    assert res.unit == "events/s"
    assert [p.throughput for p in res.scans[0].points] == pytest.approx([10.0, 10.0, 10.0])


def test_event_metric_over_makespan_and_numa_binding(store):
    def model(spec):
        n = spec.params["n"]
        return result(max(1.0, n / 4), ex.clock_ns, {"events": 10.0, "events_per_s": 10.0 / max(1.0, n / 4)})

    ex = MockExecutor(model)
    wl = Workload("m", ("work",), metrics=(MetricPattern(r"(?P<events>\d+) (?P<events_per_s>[\d.]+)"),),
                  primary_metric="events_per_s")
    res = run_study(instances, InstancesConfig(wl, ns=(2, 4, 8), policies=("numa",), reps=4), store, ex,
                    machine=machine(two_node_topology(2)))
    (scan,) = res.scans
    assert [p.throughput for p in scan.points] == pytest.approx([20.0, 40.0, 40.0])
    assert (scan.optimum_n, scan.within_1pct_n) == (4, 4)
    n4 = [s for s in ex.calls if s.params["n"] == 4 and s.params["round"] == 0]
    assert [(s.cpus, s.mem_node) for s in n4] == [((0, 1), 0), ((0, 1), 0), ((2, 3), 1), ((2, 3), 1)]


def _fork_model(ex, gain: float):
    """A forking master as minihlt does it: --fork W workers share --events E (from --first F)."""
    def model(spec):
        argv = list(spec.argv)
        events = int(argv[len(argv) - 1 - argv[::-1].index("--events") + 1])
        workers = int(argv[argv.index("--fork") + 1]) if "--fork" in argv else 1
        per_event = 0.01 / (1 + gain) if spec.mem_node is not None else 0.01
        wall = 0.2 + events / workers * per_event
        # a forking master's workers share its static data: 40 MiB once, 8 MiB per worker
        pss = 40960.0 + 8192.0 * workers
        return result(wall, ex.clock_ns, {"events": float(events), "events_per_s": events / wall, "pss_kb": pss})
    return model


def _fork_workload() -> Workload:
    return Workload("m", ("work", "--events", "100"),
                    metrics=(MetricPattern(r"(?P<events>\d+) (?P<events_per_s>[\d.]+)"),),
                    primary_metric="events_per_s",
                    fork_arg=("--fork", "{n}", "--first", "{first}", "--events", "{events}"))


def test_fork_master_does_equal_work(store):
    """Without any NUMA effect the two modes are equally fast."""
    ex = MockExecutor()
    ex.model = _fork_model(ex, gain=0.0)
    cfg = InstancesConfig(_fork_workload(), ns=(3, 4), policies=("none",), reps=5, fork_master=True)
    res = run_study(instances, cfg, store, ex, machine=machine(two_node_topology(2)))
    # 4 workers split 2 + 2 exactly; 3 split 2 (67 events) + 1 (33): integer events, 0.3 % apart
    assert [row.gain for row in res.fork] == [pytest.approx(0.5333 / 0.535, rel=1e-3), pytest.approx(1.0)]
    assert not res.fork_verdict.significant
    assert res.fork_verdict.text.startswith("no evidence")
    bound = [s for s in ex.calls if s.params.get("mode") == "numa" and s.params["n"] == 3][:2]
    assert [(s.argv[-6:], s.cpus, s.mem_node) for s in bound] == [
        (("--fork", "2", "--first", "0", "--events", "67"), (0, 1), 0),
        (("--fork", "1", "--first", "67", "--events", "33"), (2, 3), 1),
    ]
    single = [s for s in ex.calls if s.params.get("mode") == "no-numa" and s.params["n"] == 3][0]
    assert single.argv[-6:] == ("--fork", "3", "--first", "0", "--events", "100")
    assert single.cpus is None and single.mem_node is None
    assert res.fork[0].masters == [[0, 2, 67], [1, 1, 33]]


def test_memory_per_copy_and_per_node_at_the_optimum(store):
    ex = MockExecutor()
    ex.model = _fork_model(ex, gain=0.10)
    cfg = InstancesConfig(_fork_workload(), ns=(2, 4), policies=("numa",), reps=4, fork_master=True)
    res = run_study(instances, cfg, store, ex, machine=machine(two_node_topology(2)))
    assert (res.optimum_policy, res.optimum_n) == ("numa", 4)
    assert res.memory == {"policy": "numa", "n": 4, "per_copy_kb": 49152.0,
                          "per_node_kb": {"0": 2 * 49152.0, "1": 2 * 49152.0}, "total_kb": 4 * 49152.0}
    row4 = res.fork[1]
    assert (row4.no_numa_pss_kb, row4.numa_pss_kb) == (40960.0 + 4 * 8192, 2 * (40960.0 + 2 * 8192))
    con = Console(record=True, width=200)
    render(res, con, "mock")
    assert "peak PSS: 48.0 MiB per copy; node 0: 96.0 MiB, node 1: 96.0 MiB; 192.0 MiB in all" in con.export_text()


def test_counters_where_the_pmu_has_them(store):
    """IPC and LLC misses per event against copies, from perf stat counters."""
    def model(spec):
        n = spec.params["n"]
        r = result(1.0, ex.clock_ns, {"events": 10.0, "events_per_s": 10.0})
        if spec.perf_events:
            r.counters = {"cycles": 2e9, "instructions": 3e9 / n, "LLC-load-misses": 1000.0 * n}
        return r

    wl = Workload("m", ("work",), metrics=(MetricPattern(r"(?P<events>\d+) (?P<events_per_s>[\d.]+)"),),
                  primary_metric="events_per_s")
    with_pmu = Machine(two_node_topology(2), {"probes": {"hw_counters": {"available": True, "reason": "ok"}}})
    ex = MockExecutor(model)
    res = run_study(instances, InstancesConfig(wl, ns=(1, 2, 4), policies=("compact",), reps=2), store, ex,
                    machine=with_pmu)
    assert all(s.perf_events == instances.COUNTERS for s in ex.calls)
    pts = res.scans[0].points
    assert [p.ipc for p in pts] == pytest.approx([1.5, 0.75, 0.375])
    assert [p.llc_per_unit for p in pts] == pytest.approx([100.0, 200.0, 400.0])  # misses per event
    con = Console(record=True, width=120)
    render(res, con, "m")
    assert "LLC misses/event" in con.export_text()
    assert not any("not measured" in n for n in res.notes)
    # no PMU (this VM): no perf around the copies, one line saying so, the study goes on with time
    no_pmu = Machine(two_node_topology(2), {"probes": {"hw_counters": {"available": False,
                                                                      "reason": "no hardware counters"}}})
    ex = MockExecutor(model)
    res = run_study(instances, InstancesConfig(wl, ns=(1, 2), policies=("compact",), reps=2), store, ex,
                    machine=no_pmu)
    assert all(s.perf_events is None for s in ex.calls) and res.scans[0].points[0].ipc is None
    assert "IPC and last-level-cache misses per event not measured: no hardware counters" in res.notes


def test_fork_master_finds_a_planted_gain(store):
    ex = MockExecutor()
    ex.model = _fork_model(ex, gain=0.10)
    cfg = InstancesConfig(_fork_workload(), ns=(4,), policies=("none",), reps=6, fork_master=True)
    res = run_study(instances, cfg, store, ex, machine=machine(two_node_topology(2)))
    (row,) = res.fork
    # no NUMA: 0.2 + 100/4 * 0.01 s; NUMA: 2 masters of 2 workers, 50 events each, 10 % faster
    assert row.gain == pytest.approx((0.2 + 0.25) / (0.2 + 0.25 / 1.1))
    assert res.fork_verdict.significant and res.fork_verdict.p_value == pytest.approx(2 / 64)
    assert "gives +" in res.fork_verdict.text


def test_fork_master_bad_input(store):
    with pytest.raises(PerflabError, match="no fork argument"):
        instances.design(InstancesConfig(Workload("m", ("x",)), ns=(1,), fork_master=True), one_node_box())
    old = Workload("m", ("x", "--events", "10"), fork_arg=("--fork", "{n}"))
    with pytest.raises(PerflabError, match="needs {first} and {events}"):
        instances.design(InstancesConfig(old, ns=(1,), fork_master=True), one_node_box())
    with pytest.raises(PerflabError, match="needs a fixed event count"):
        instances.design(InstancesConfig(Workload("m", ("x",), fork_arg=_fork_workload().fork_arg),
                                         ns=(1,), fork_master=True), one_node_box())
    with pytest.raises(PerflabError, match="larger than a NUMA node"):
        instances.design(InstancesConfig(Workload("m", ("x",)), threads_per_copy=3), one_node_box())


def test_failed_copies_are_stored_and_left_out(store):
    def model(spec):
        bad = spec.params["n"] == 2 and spec.params["round"] == 0 and spec.params["copy"] == 1
        return result(1.0, ex.clock_ns, exit_code=3 if bad else 0)

    ex = MockExecutor(model)
    res = run_study(instances, InstancesConfig(Workload("m", ("x",)), ns=(1, 2), policies=("none",), reps=3),
                    store, ex, machine=machine(one_node_box()))
    p2 = res.scans[0].points[1]
    assert (p2.reps, p2.failed, p2.throughput) == (2, 1, pytest.approx(2.0))
    assert (res.level, p2.ci.level) == (0.75, 0.5)  # 2 rounds left: a 50 % interval, said in the cell
    con = Console(record=True, width=120)
    render(res, con, "m")
    assert "(2-2, 50%)" in con.export_text()
    assert res.failures == {"exit status 3": 1}
    assert any("1 runs failed" in n for n in res.notes)
    assert len(store.measurements(res.campaign_id)) == 3 * 3
    # a configuration whose runs all fail is reported as failed, not fast or slow
    res2 = run_study(instances, InstancesConfig(Workload("m", ("false",)), ns=(1, 2), policies=("none",), reps=2),
                     store, MockExecutor(), machine=machine(one_node_box()))
    assert res2.failed and res2.optimum_n is None
    con = Console(record=True, width=120)
    render(res2, con, "false")
    assert "every point failed" in con.export_text()


def test_helpers():
    assert default_ns(4) == [1, 2, 3, 4]
    assert default_ns(64) == [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]
    assert default_ns(10) == [1, 2, 3, 4, 6, 8, 10]
    assert sparkline([1, 2, 3, 3]) == "▁▅██"
    assert sign_test([1.1] * 6) == (6, 6, pytest.approx(2 / 64))
    assert sign_test([1.0, 1.0]) == (0, 0, 1.0)
    assert point_throughput([result(2.0, 0), result(2.0, 10**9)], None) == (pytest.approx(2 / 3), None)


def test_snapshot_of_the_terminal_output(store):
    ex = MockExecutor()
    ex.model = _fork_model(ex, gain=0.10)
    cfg = InstancesConfig(_fork_workload(), ns=(1, 2, 4, 8), reps=5, fork_master=True)
    res = run_study(instances, cfg, store, ex, machine=machine(two_node_topology(2)))
    con = Console(record=True, width=150)
    render(res, con, "mock")
    text = con.export_text()
    snap = SNAPSHOTS / "instances.txt"
    if os.environ.get("PERFLAB_UPDATE_SNAPSHOTS"):
        snap.write_text(text)
    assert text == snap.read_text()


def test_verdict_check_short():
    fp, det = verdict_check(runs=8, seed=1)
    assert fp <= 0.25 and det >= 0.75
