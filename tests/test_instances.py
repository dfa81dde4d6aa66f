"""perflab instances: exact aggregation/optimum through the MockExecutor; a real minihlt scan."""

from __future__ import annotations

import pytest

from perflab.model import Workload
from perflab.errors import PerflabError
from perflab.model import RunResult
from perflab.platform.topology import Core, Cpu, Node, Topology
from perflab.studies.instances import (
    InstancesConfig,
    default_ns,
    run_instances,
    sparkline,
    throughput_of,
)


def two_node_box() -> Topology:
    """2 sockets = 2 NUMA nodes, 2 cores each, no SMT: node 0 = cpus 0-1, node 1 = cpus 2-3."""
    cpus = tuple(Cpu(c, c, c // 2, c // 2, (c,)) for c in range(4))
    cores = tuple(Core(c, c // 2, c // 2, (c,)) for c in range(4))
    return Topology(cpus, cores, (0, 1), (Node(0, (0, 1)), Node(1, (2, 3))))


def one_node_box() -> Topology:
    cpus = tuple(Cpu(c, c, 0, 0, (c,)) for c in range(2))
    cores = tuple(Core(c, 0, 0, (c,)) for c in range(2))
    return Topology(cpus, cores, (0,), (Node(0, (0, 1)),))


@pytest.fixture
def store(tmp_path):
    from perflab.store import open_store

    return open_store(str(tmp_path / "perflab.db"))


# copies/s = N / max wall: 1, 2, 2.13, 2.14 for N = 1..4
WALL = {1: 1.0, 2: 1.0, 3: 3 / 2.13, 4: 4 / 2.14}


def test_mock_wall_time_throughput_gain_and_optimum(store):
    from perflab.measure.executor import MockExecutor

    ex = MockExecutor(lambda spec: WALL[spec.params["n"]])
    cfg = InstancesConfig(Workload("mock", ("work",)), ns=(1, 2, 3, 4), policies=("none", "compact"), reps=3)
    res = run_instances(cfg, ex, store, topology=one_node_box())
    assert res.unit == "copies/s"
    for scan in res.scans:
        tp = [p.throughput for p in scan.points]
        assert tp == pytest.approx([1.0, 2.0, 2.13, 2.14])
        gains = [p.gain_per_copy for p in scan.points]
        assert gains[0] is None and gains[1:] == pytest.approx([1.0, 0.13, 0.01])
        assert [p.per_copy for p in scan.points] == pytest.approx([1.0, 1.0, 0.71, 0.535])
        assert (scan.optimum_n, scan.within_1pct_n) == (4, 3)
        assert scan.optimum_throughput == pytest.approx(2.14)
    assert (res.optimum_n, res.optimum_throughput) == (4, pytest.approx(2.14))
    # every copy ran, compact copies pinned round-robin (oversubscribed at N = 3, 4)
    assert len(ex.calls) == 3 * 2 * (1 + 2 + 3 + 4)
    compact4 = [s.cpus for s in ex.calls if s.params["policy"] == "compact" and s.params["n"] == 4][:4]
    assert compact4 == [(0,), (1,), (0,), (1,)]
    assert all(s.cpus is None for s in ex.calls if s.params["policy"] == "none")
    camp = store.campaign(res.campaign_id)
    assert camp.summary["optimum_n"] == 4
    assert camp.summary["optimum_throughput"] == pytest.approx(2.14)
    assert len(store.measurements(res.campaign_id)) == len(ex.calls)
    assert any("oversubscribes" in n for n in res.notes)
    from rich.console import Console

    from perflab.studies.instances import render

    con = Console(record=True, width=160)
    render(res, con, "mock")
    text = con.export_text()
    assert "optimum N = 4 (2.14 copies/s); smallest N within 1%: 3" in text
    assert "2.14 (2.14-2.14)*" in text


def test_mock_knee_where_throughput_saturates(store):
    from perflab.measure.executor import MockExecutor

    # 4 CPUs: N copies take max(1, N/4) s, so copies/s = min(N, 4): a knee at N = 4
    ex = MockExecutor(lambda spec: max(1.0, spec.params["n"] / 4))
    cfg = InstancesConfig(Workload("mock", ("work",)), max_n=12, policies=("compact",), reps=2)
    res = run_instances(cfg, ex, store, topology=two_node_box())
    (scan,) = res.scans
    assert res.ns == [1, 2, 3, 4, 6, 8, 12]
    assert [p.throughput for p in scan.points] == pytest.approx([1, 2, 3, 4, 4, 4, 4])
    assert (scan.optimum_n, scan.within_1pct_n, scan.knee_n) == (4, 4, 4)


def test_mock_metric_summed_and_numa_binding(store):
    from perflab.measure.executor import MockExecutor

    def model(spec):
        n = spec.params["n"]
        rate = 10.0 if n <= 4 else 10.0 * 4 / n  # 4 CPUs: per-copy rate drops beyond 4 copies
        return RunResult(wall_ns=10**9, user_s=1, sys_s=0, maxrss_kb=1, minflt=0, majflt=0, nvcsw=0,
                         nivcsw=0, exit_code=0, metrics={"events_per_s": rate})

    wl = Workload("m", ("work",), primary_metric="events_per_s")
    ex = MockExecutor(model)
    res = run_instances(InstancesConfig(wl, ns=(2, 4, 8), policies=("numa",), reps=2), ex, store,
                        topology=two_node_box())
    (scan,) = res.scans
    assert [p.throughput for p in scan.points] == pytest.approx([20.0, 40.0, 40.0])
    assert (scan.optimum_n, scan.within_1pct_n) == (4, 4)
    assert res.unit == "events/s"
    n4 = [s for s in ex.calls if s.params["n"] == 4][:4]
    assert [(s.cpus, s.mem_node) for s in n4] == [((0, 1), 0), ((0, 1), 0), ((2, 3), 1), ((2, 3), 1)]


def test_mock_fork_master_table(store):
    from perflab.measure.executor import MockExecutor

    def model(spec):
        workers = int(spec.argv[-1]) if "--fork" in spec.argv else 1
        # an unbound master's remote-memory workers run 10% slower than node-bound ones
        rate = 100.0 * workers * (1.0 if spec.mem_node is not None else 0.9)
        return RunResult(wall_ns=10**9, user_s=1, sys_s=0, maxrss_kb=1, minflt=0, majflt=0, nvcsw=0,
                         nivcsw=0, exit_code=0, metrics={"events_per_s": rate})

    wl = Workload("m", ("work",), primary_metric="events_per_s", fork_arg=("--fork", "{n}"))
    ex = MockExecutor(model)
    res = run_instances(InstancesConfig(wl, ns=(4,), policies=("none",), reps=2, fork_master=True),
                        ex, store, topology=two_node_box())
    (row,) = res.fork
    assert (row.n, row.no_numa, row.numa) == (4, pytest.approx(360.0), pytest.approx(400.0))
    assert row.gain == pytest.approx(1 / 0.9)
    assert row.masters == [(0, 2), (1, 2)]
    assert row.gain_lo == pytest.approx(1 / 0.9) and row.gain_hi == pytest.approx(1 / 0.9)
    bound = [s for s in ex.calls if s.params.get("mode") == "numa"][:2]
    assert [(s.argv[-2:], s.cpus, s.mem_node) for s in bound] == [
        (("--fork", "2"), (0, 1), 0), (("--fork", "2"), (2, 3), 1)
    ]
    single = [s for s in ex.calls if s.params.get("mode") == "no-numa"][0]
    assert single.argv[-2:] == ("--fork", "4") and single.cpus is None and single.mem_node is None


def test_errors_and_helpers(store):
    from perflab.measure.executor import MockExecutor

    with pytest.raises(PerflabError, match="no fork argument"):
        run_instances(InstancesConfig(Workload("m", ("x",)), ns=(1,), fork_master=True),
                      MockExecutor(), store, topology=one_node_box())
    with pytest.raises(PerflabError, match="copies failed"):
        run_instances(InstancesConfig(Workload("m", ("false",)), ns=(1, 2), policies=("none",)),
                      MockExecutor(), store, topology=one_node_box())
    assert store.campaigns("instances")[-1].status == "failed"
    assert default_ns(4) == [1, 2, 3, 4]
    assert default_ns(64) == [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]
    assert default_ns(10) == [1, 2, 3, 4, 6, 8, 10]
    assert sparkline([1, 2, 3, 3]) == "▁▅██"
    ok = RunResult(wall_ns=2 * 10**9, user_s=1, sys_s=0, maxrss_kb=1, minflt=0, majflt=0, nvcsw=0,
                   nivcsw=0, exit_code=0)
    assert throughput_of(Workload("m", ("x",)), [ok, ok]) == 1.0


def test_default_policies_skip_meaningless_ones(store):
    from perflab.measure.executor import MockExecutor

    res = run_instances(InstancesConfig(Workload("m", ("sleep", "0.1")), ns=(1, 2), reps=1),
                        MockExecutor(), store, topology=one_node_box())
    assert [s.policy for s in res.scans] == ["none", "compact"]
    assert any(n.startswith("numa skipped: 1 NUMA node") for n in res.notes)
    res2 = run_instances(InstancesConfig(Workload("m", ("sleep", "0.1")), ns=(1, 2), reps=1,
                                         policies=("numa",)), MockExecutor(), store, topology=one_node_box())
    assert any("1 NUMA node: numa == compact" in n for n in res2.notes)


# --- real: a small minihlt scan -------------------------------------------------------------

def test_real_minihlt_scan(store):
    from perflab.measure.executor import default_executor
    from perflab.workloads import resolve

    from dataclasses import replace

    wl = resolve("minihlt-quick", ())
    wl = replace(wl, argv=wl.argv + ("--events", "30"))  # the last --events wins: ~0.1 s per copy
    res = run_instances(InstancesConfig(wl, ns=(1, 2, 3, 4), policies=("none",), reps=2),
                        default_executor(), store)
    (scan,) = res.scans
    assert res.unit == "events/s"
    assert all(p.throughput > 0 for p in scan.points)
    assert scan.points[1].gain_per_copy is not None
    assert scan.optimum_n in (1, 2, 3, 4)
    assert scan.optimum_throughput == max(p.throughput for p in scan.points)
    assert len(store.measurements(res.campaign_id)) == 2 * (1 + 2 + 3 + 4)
    assert all(m.result.ok for m in store.measurements(res.campaign_id))


def test_cli_plan_on_a_snapshot_and_bad_input(topology_root, capsys):
    from perflab.cli import main

    root = topology_root("48amd64-4pa2n6c-sparse").path
    main(["instances", "--plan", "--root", root, "--n", "8", "--policy", "numa"])
    out = capsys.readouterr().out
    assert "NUMA nodes 0, 1, 2, 33, 34, 45, 72, 73" in out
    assert "5:30-35[m45]" in out and "7:42-47[m73]" in out
    with pytest.raises(SystemExit) as exc:
        main(["instances", "--root", root, "--", "true"])
    assert exc.value.code == 2
    assert "--root only applies to --plan" in capsys.readouterr().err


def test_cli_real_copies_per_second_json(tmp_path, capsys):
    import json

    from perflab.cli import main

    out = tmp_path / "inst.json"
    main(["instances", "--n", "1,2", "--policy", "compact", "--reps", "2", "--db", str(tmp_path / "p.db"),
          "--json", str(out), "--", "sleep", "0.05"])
    data = json.loads(out.read_text())
    assert data["unit"] == "copies/s" and data["ns"] == [1, 2]
    tp = [p["throughput"] for p in data["scans"][0]["points"]]
    assert 10 < tp[0] < 21 and tp[1] > 1.3 * tp[0]  # two sleeping copies overlap
    assert data["optimum_n"] == 2
    assert "optimum N = 2" in capsys.readouterr().out
