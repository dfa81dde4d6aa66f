"""perflab compare for every study kind: campaigns matched on design keys, planted effects found.

cores and instances campaigns are made by the studies themselves through the MockExecutor;
run, variants, frontend and micro campaigns are synthetic stores with the params each study
stores (read from studies/*.py), with incidental params that differ between A and B.
"""

from __future__ import annotations

import random

import pytest

from perflab.measure.executor import MockExecutor
from perflab.model import RunResult, Workload
from perflab.platform.topology import Core, Cpu, Node, Topology
from perflab.store import open_store
from perflab.studies.compare.keys import design_key, series
from perflab.studies.compare.study import CompareConfig, run_compare


@pytest.fixture
def store(tmp_path):
    s = open_store(str(tmp_path / "perflab.db"))
    yield s
    s.close()


def _box(n: int) -> Topology:
    cpus = tuple(Cpu(c, c, 0, 0, (c,)) for c in range(n))
    cores = tuple(Core(c, 0, 0, (c,)) for c in range(n))
    return Topology(cpus, cores, (0,), (Node(0, tuple(range(n))),))


def _result(wall: float, **metrics: float) -> RunResult:
    return RunResult(wall_ns=int(wall * 1e9), user_s=0.9 * wall, sys_s=0.01, maxrss_kb=2048,
                     minflt=1, majflt=0, nvcsw=1, nivcsw=0, exit_code=0, metrics=dict(metrics))


def _synthetic(store, study: str, points: list[tuple[str, dict]], slow: dict[int, float], seed: int,
               reps: int = 10, extra=lambda rep: {}) -> int:
    """A campaign of ``study``: every point ``reps`` times, point i slowed by slow[i]."""
    rng = random.Random(seed)
    cid = store.start_campaign(study, {})
    for rep in range(reps):
        for i, (label, params) in enumerate(points):
            wall = 0.05 * (1 + 0.1 * i) * slow.get(i, 1.0) * rng.lognormvariate(0, 0.01)
            store.add_measurement(cid, _result(wall, ns_per_op=wall * 1e3), {**params, **extra(rep)},
                                  rep=rep, label=label)
    store.finish_campaign(cid, "done")
    return cid


def _significant_walls(res) -> set[str]:
    return {r.key for r in res.rows if r.measure == "wall_s" and r.significant and not r.overall}


def test_cores_campaigns_match_on_cpu_and_find_the_slow_one(store):
    from perflab.platform.machine import Machine
    from perflab.studies import run_study
    from perflab.studies.cores import study as cores
    from perflab.studies.cores.study import CoresConfig

    def model(slow: dict[int, float], seed: int):
        rng = random.Random(seed)
        return lambda spec: 0.05 * slow.get(spec.cpus[0], 1.0) * rng.lognormvariate(0, 0.01)

    cfg = CoresConfig(Workload("mock", ("work",)), rounds=10, min_rounds=10, max_time=1e9)
    machine = Machine(_box(4), {"hostname": "mock"})
    a = run_study(cores, cfg, store, MockExecutor(model({}, 1)), machine=machine).campaign_id
    b = run_study(cores, cfg, store, MockExecutor(model({2: 1.08}, 2)), machine=machine).campaign_id
    res = run_compare(CompareConfig(a, b), store)
    assert not res.unmatched_a and not res.unmatched_b
    points = [r for r in res.rows if not r.overall]
    assert {r.key for r in points if r.measure == "wall_s"} == {f"cpu={c}" for c in range(4)}
    assert all(r.n_a == r.n_b == 10 for r in points)  # rounds are repetitions, not keys
    assert _significant_walls(res) == {"cpu=2"}
    row = next(r for r in res.rows if r.key == "cpu=2" and r.measure == "wall_s")
    assert 1.05 < row.ratio < 1.11 and row.lo > 1 and row.better == "A"


class _SpreadMock(MockExecutor):
    """The mock with a start spread that varies per concurrent start, as real copies have."""

    def __init__(self, model, seed: int) -> None:
        super().__init__(model)
        self.rng = random.Random(seed)

    def run_concurrent(self, specs, together=True):
        res = super().run_concurrent(specs, together)
        res.start_spread_ns = self.rng.randint(10_000, 90_000)
        return res


def test_instances_campaigns_match_despite_start_spread_and_aggregate_copies(store):
    from perflab.platform.machine import Machine
    from perflab.studies import run_study
    from perflab.studies.instances import study as instances
    from perflab.studies.instances.study import InstancesConfig

    def model(slow_n: dict[int, float], seed: int):
        rng = random.Random(seed)
        return lambda spec: 0.1 * spec.params["n"] ** 0.5 * slow_n.get(spec.params["n"], 1.0) * \
            rng.lognormvariate(0, 0.01)

    cfg = InstancesConfig(Workload("mock", ("work",)), ns=(1, 2, 3), policies=("none", "compact"), reps=8)
    machine = Machine(_box(2), {"hostname": "mock"})
    a = run_study(instances, cfg, store, _SpreadMock(model({}, 1), 1), machine=machine).campaign_id
    b = run_study(instances, cfg, store, _SpreadMock(model({3: 1.1}, 2), 2), machine=machine).campaign_id
    # The incidental facts differ between the campaigns (kept in each run's health, not its params).
    spreads = lambda c: {m.result.health["start_spread_ns"] for m in store.measurements(c)}  # noqa: E731 - a one-line reader for the two campaigns
    assert not spreads(a) & spreads(b)
    res = run_compare(CompareConfig(a, b), store)
    assert not res.unmatched_a and not res.unmatched_b
    walls = [r for r in res.rows if r.measure == "wall_s" and not r.overall]
    assert {r.key for r in walls} == {f"policy={p} n={n}" for p in ("none", "compact") for n in (1, 2, 3)}
    # One observation per round: the copies of a round are aggregated (makespan), not pooled.
    assert all(r.n_a == r.n_b == 8 for r in walls)
    assert _significant_walls(res) == {"policy=none n=3", "policy=compact n=3"}
    row = next(r for r in walls if r.key == "policy=none n=3")
    assert row.median_a == pytest.approx(0.1 * 3 ** 0.5, rel=0.03)


def test_instances_makespan_and_per_copy_metric_are_not_summed():
    class M:
        def __init__(self, i, rep, wall, rate):
            self.id, self.rep, self.label = i, rep, "none/n=2"
            self.params = {"policy": "none", "n": 2, "copy": i % 2, "start_spread_ns": i}
            self.result = _result(wall, events_per_s=rate)

    s, texts = series("instances", [M(0, 0, 1.0, 10.0), M(1, 0, 2.0, 20.0), M(2, 1, 1.5, 30.0),
                                    M(3, 1, 1.0, 40.0)])
    (key,) = s
    assert texts[key] == "policy=none n=2"
    assert s[key]["wall_s"] == [2.0, 1.5]  # the slowest copy of each round
    assert s[key]["metric:events_per_s"] == [15.0, 35.0]  # the median copy, not the sum


def test_design_keys_leave_incidental_params_out():
    assert design_key("cores", "cpu3", {"cpu": 3, "round": 7}).key == (("cpu", "3"),)
    fork = design_key("instances", "fork-numa/n=4", {"mode": "numa", "n": 4, "master": 1, "node": 1,
                                                     "workers": 2})
    assert fork.key == (("mode", "numa"), ("n", "4")) and fork.text.startswith("fork ")
    fe = design_key("frontend", "4k-65536", {"kind": "call", "bytes": 65536, "n": 300, "mode": "4k", "cpu": 1})
    assert fe.key == (("kind", "call"), ("bytes", "65536"), ("mode", "4k"))
    run = design_key("run", "sleep 0.02", {"t": "0.02"})
    assert run.key == (("command", "sleep 0.02"), ("t", "0.02")) and run.text == "sleep 0.02"


@pytest.mark.parametrize("study,points,extra", [
    ("variants", [(v, {"variant": v}) for v in ("O2", "O3", "m32")], lambda rep: {}),
    ("frontend", [(f"{m}-{b}", {"kind": "call", "bytes": b, "n": b // 64, "mode": m})
                  for b in (4096, 65536) for m in ("4k", "2m")], None),
    ("micro", [(f"{b}-{a}", {"bench": b, "abi": a}) for b in ("syscall", "call") for a in ("m64", "m32")],
     lambda rep: {}),
    ("run", [("work --n 1", {"n": "1"}), ("work --n 2", {"n": "2"})], lambda rep: {}),
])
def test_synthetic_campaigns_of_each_kind(store, study, points, extra):
    if extra is None:  # frontend: B ran on another CPU than A; the CPU is not a design key
        ea, eb = (lambda rep: {"cpu": 0}), (lambda rep: {"cpu": 1})
    else:
        ea = eb = extra
    a = _synthetic(store, study, points, {}, seed=1, extra=ea)
    b = _synthetic(store, study, points, {1: 1.06}, seed=2, extra=eb)
    res = run_compare(CompareConfig(a, b), store)
    assert not res.unmatched_a and not res.unmatched_b
    assert len({r.key for r in res.rows if not r.overall}) == len(points)
    planted = design_key(study, points[1][0], points[1][1]).text
    assert _significant_walls(res) == {planted}
    row = next(r for r in res.rows if r.measure == "wall_s" and r.key == planted)
    assert 1.03 < row.ratio < 1.09 and row.lo > 1
    rate = next(r for r in res.rows if r.key == row.key and r.measure == "metric:ns_per_op")
    # ns per op: significant, but the campaign declares no direction for it, so none is guessed
    assert rate.significant and rate.better == "" and rate.verdict_cell == "B higher"


def test_campaigns_of_two_kinds_are_refused(store):
    from perflab.errors import PerflabError

    a = _synthetic(store, "variants", [("O2", {"variant": "O2"})], {}, 1, reps=3)
    b = _synthetic(store, "micro", [("call-m64", {"bench": "call", "abi": "m64"})], {}, 2, reps=3)
    with pytest.raises(PerflabError, match="same study"):
        run_compare(CompareConfig(a, b), store)


def test_energy_per_run_counts_no_domain_twice():
    from perflab.studies.compare.keys import energy_j

    r = _result(1.0)
    r.energy = {"rapl:package-0": 10.0, "rapl:package-0/core": 6.0, "rapl:package-0/dram": 2.0}
    assert energy_j(r) == 12.0
    r.energy = {"ipmi:node": 40.0, "rapl:package-0": 10.0}
    assert energy_j(r) == 40.0
    r.energy = {}
    assert energy_j(r) is None
