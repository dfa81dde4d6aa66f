"""`perflab run` keeps its commands interleaved where the first rounds show two speeds (mock executor)."""

from __future__ import annotations

import random

import pytest

from perflab.measure.executor import MockExecutor
from perflab.platform.machine import Machine
from perflab.platform.topology import Topology
from perflab.store import open_store
from perflab.studies import run_study
from perflab.studies.run import study as run_mod
from perflab.studies.run.order import two_speeds_seen
from perflab.studies.run.study import Command, RunConfig

MACHINE = Machine(topology=Topology(cpus=(), cores=(), sockets=(), nodes=()), metadata={"hostname": "t"})


@pytest.fixture
def store(tmp_path):
    s = open_store(str(tmp_path / "r.db"))
    yield s
    s.close()


def _model(two: bool, seed: int = 1):
    """A: 30 ms, B: 31 ms; with ``two`` each run is 1.6x slower with probability 0.4 (a draw per
    run, seeded), A's first run slow and B's first fast, so that hyperfine's rule gives A 63 runs
    and B 97; with one speed A takes 48 ms and B 31 ms throughout (the same targets)."""
    rng = random.Random(seed)
    seen: dict[str, int] = {}

    def model(spec):
        k = seen.get(spec.label, 0)
        seen[spec.label] = k + 1
        base = 0.030 if spec.label == "A" else 0.031
        jitter = 1 + 0.002 * rng.random()
        if not two:
            return (0.048 if spec.label == "A" else base) * jitter
        slow = spec.label == "A" if k == 0 else rng.random() < 0.4
        return base * (1.6 if slow else 1.0) * jitter

    return model


def _run(store, model, **kw):
    ex = MockExecutor(model)
    cfg = RunConfig(commands=(Command("A", ("a",)), Command("B", ("b",))), seed=3, **kw)
    return run_study(run_mod, cfg, store, ex, machine=MACHINE), ex


def test_two_speeds_keep_every_command_in_every_round(store):
    res, ex = _run(store, _model(two=True))
    a, b = res.benchmarks
    assert a.n == b.n == 97  # not 63 and 97: B never ran alone
    labels = [s.label for s in ex.calls]
    assert all(sorted(labels[i:i + 2]) == ["A", "B"] for i in range(0, len(labels), 2))
    note = res.warnings[0]
    assert note == ("two speeds in the first 63 rounds: every command ran in every round until the last one "
                    "stopped (97 runs each), so all met the same speeds (interleaved, none alone in a block)")
    assert sum("two speeds in the first" in w for w in res.warnings) == 1


def test_one_speed_keeps_each_command_to_its_own_runs(store):
    res, ex = _run(store, _model(two=False))
    a, b = res.benchmarks
    assert (a.n, b.n) == (63, 97)
    assert [s.label for s in ex.calls[-30:]] == ["B"] * 30  # B's last runs alone, back to back
    assert not any("two speeds in the first" in w for w in res.warnings)


def test_an_explicit_number_of_runs_is_kept(store):
    res, ex = _run(store, _model(two=True), runs=40)
    a, b = res.benchmarks
    assert a.n == b.n == 40 and len(ex.calls) == 80
    assert not any("two speeds in the first" in w for w in res.warnings)


def test_max_runs_still_bounds_every_command(store):
    res, _ = _run(store, _model(two=True), max_runs=80)
    a, b = res.benchmarks
    assert a.n == b.n == 80
    assert "(80 runs each)" in res.warnings[0]


def test_two_speeds_seen_needs_enough_common_rounds():
    rng = random.Random(2)
    two = [[0.03 * (1.6 if rng.random() < 0.4 else 1) * (1 + 0.002 * rng.random()) for _ in range(30)]
           for _ in range(2)]
    one = [[0.03 * (1 + 0.002 * rng.random()) for _ in range(30)] for _ in range(2)]
    assert two_speeds_seen(two) and not two_speeds_seen(one)
    assert not two_speeds_seen([two[0][:4], two[1][:4]])  # 8 runs pooled: too few to tell
    assert not two_speeds_seen([two[0]])
