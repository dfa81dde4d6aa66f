"""The full lab's time budget (studies/lab/budget.py): each study's rounds from its share of the
time left, never fewer than its test needs to answer. Costs are given, not measured: nothing here
depends on how fast the machine is."""

from __future__ import annotations

import math
import os
from types import SimpleNamespace

import pytest

from perflab.model import Workload
from perflab.studies.lab import budget, steps
from perflab.studies.lab.budget import Item, allot
from perflab.studies.lab.study import _median_wall
from perflab.studies.run.result import Benchmark, RunStudyResult

ORDER = ["run", "cores", "instances", "variants", "profile", "frontend", "micro"]


def _items(seconds: float, ncpu: int = 2) -> dict[str, Item]:
    return budget.items(ORDER, seconds, ncpu, {"few": 4, "full": 9}, variants=6,
                        cores_alpha=0.05, variants_alpha=0.05)


def _cost(items: dict[str, Item], rounds: dict[str, int]) -> float:
    return sum(it.cost(rounds[k]) for k, it in items.items())


@pytest.mark.parametrize("seconds", [0.05, 0.5, 2.5])
def test_the_rounds_fit_the_budget_where_the_fewest_do(seconds):
    its = _items(seconds)
    least = sum(it.cost(it.least) for it in its.values())
    for left in (least, least + 30, 1.5 * least, 600.0):
        rounds = allot(its, left)
        if least <= left:
            assert _cost(its, rounds) <= left + 1e-6
        assert all(its[k].least <= r <= its[k].most for k, r in rounds.items())


def test_plenty_of_time_gives_every_study_its_most_and_too_little_its_fewest():
    its = _items(0.05)
    assert allot(its, 1e6) == {k: it.most for k, it in its.items()}
    assert allot(its, 0.0) == {k: it.least for k, it in its.items()}
    # more time never means fewer rounds
    a, b = allot(its, 200.0), allot(its, 400.0)
    assert all(a[k] <= b[k] for k in its)


def test_the_fewest_rounds_are_what_each_test_needs_to_answer():
    for ncpu in (2, 16, 256):
        its = budget.items(ORDER, 1.0, ncpu, {"few": 4, "full": 4}, 6, 0.05, 0.05)
        cores = its["cores"].least
        assert 0.5 ** (cores - 2) < 0.05 / ncpu and not 0.5 ** (cores - 3) < 0.05 / ncpu or cores == 8
        variants = its["variants"].least
        assert 2.0 / 2 ** variants * 5 < 0.05
        assert its["instances"].most == 0  # one scan of N only: nothing to buy


def test_a_study_that_overran_shrinks_the_ones_after_it():
    its = _items(2.5)
    first = allot(its, 600.0)
    # cores took its share and 200 s more: what is left goes to the studies after it
    later = {k: v for k, v in its.items() if k not in ("run", "cores")}
    left = 600.0 - its["run"].cost(first["run"]) - its["cores"].cost(first["cores"]) - 200.0
    again = allot(later, left)
    assert all(again[k] <= first[k] for k in later) and again != {k: first[k] for k in later}


def test_the_steps_take_their_rounds_from_the_budget(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    now = [1000.0]
    monkeypatch.setattr(steps.time, "monotonic", lambda: now[0])
    said: list[str] = []
    ctx = SimpleNamespace(config=SimpleNamespace(quick=False, seed=1, order=tuple(ORDER)), notes=[],
                          session=SimpleNamespace(say=said.append), minihlt=True, seconds=2.5,
                          workload=Workload(name="minihlt", argv=("minihlt", "--events", "200"),
                                            fork_arg=("--fork", "{n}", "--first", "{first}", "--events", "{events}")),
                          deadline=1000.0 + 600.0)  # a budget of 600 s
    cores = steps.cores_step(ctx).config
    assert 8 <= cores.rounds < 30  # 30 rounds of 2 CPUs at 2.5 s (150 s) do not fit beside the rest
    assert cores.span <= cores.rounds * 2 * 2.5  # never waits for its blocks
    # run and cores took 250 s: instances' 5 rounds at N = 1, 2, 4 (50 s) and the rest share 350 s
    now[0] += 250
    var = steps.variants_step(ctx).config
    assert 8 <= var.rounds < 18
    now[0] = 1000.0
    assert "budget:" in said[0]
    # with a day left every study gets its thorough settings
    ctx.deadline = now[0] + 86400
    assert steps.cores_step(ctx).config.rounds == 30
    assert steps.variants_step(ctx).config.rounds == 18
    assert steps.frontend_step(ctx).config.points_per_octave == 2
    assert steps.instances_step(ctx).config.fork_master
    # with nothing left, the fewest that still answer, and the quick sweeps
    ctx.deadline = now[0]
    assert steps.cores_step(ctx).config.rounds == 8
    assert steps.variants_step(ctx).config.rounds == 8
    assert steps.frontend_step(ctx).config.points_per_octave == 1
    assert steps.micro_step(ctx).config.scale == 0.1
    inst = steps.instances_step(ctx).config  # still the rounds an optimum needs, without the extras
    assert inst.reps == 5 and inst.ns == (1, 2, 4) and not inst.fork_master
    # a quick lab has no budget: its fixed settings
    ctx.config.quick, ctx.deadline = True, None
    assert steps.cores_step(ctx).config.rounds == 16
    assert math.isclose(steps.cores_step(ctx).config.span, 10.0)


def test_the_workload_time_is_the_run_studys_median_else_one_stored_run():
    bench = Benchmark(command="w", params={}, summary={"median": 2.5, "n": 10})
    assert _median_wall(RunStudyResult([bench])) == 2.5
    assert _median_wall(None) is None and _median_wall(RunStudyResult([])) is None
    ran: list[str] = []

    def run(spec, rep=0):
        ran.append(spec.label)
        return SimpleNamespace(wall_ns=3_000_000_000)

    ctx = SimpleNamespace(seconds=None, workload=Workload(name="w", argv=("w",)), session=SimpleNamespace(run=run))
    assert steps.workload_seconds(ctx) == 3.0 and steps.workload_seconds(ctx) == 3.0
    assert ran == ["budget-probe"]  # once, through the session (stored, read back on resume)


@pytest.mark.parametrize("left", [350.0, 500.0, 700.0])
def test_no_study_is_left_a_round_short_that_would_fit(left):
    its = _items(2.5)
    rounds = allot(its, left)
    spare = left - _cost(its, rounds)
    assert spare >= -1e-6
    assert not [k for k, it in its.items() if rounds[k] < it.most and it.per_round <= spare]


def test_the_pgo_variant_trains_in_the_same_directory_from_any_working_directory(tmp_path, monkeypatch):
    # A PGO build is keyed by the directory it trained in: the lab's minihlt trains in one fixed
    # directory, so a lab run from another directory finds its PGO build in the cache.
    ctx = SimpleNamespace(config=SimpleNamespace(quick=True, seed=1, order=tuple(ORDER)), notes=[],
                          session=SimpleNamespace(say=lambda s: None), minihlt=True, seconds=2.5,
                          workload=Workload(name="minihlt", argv=("minihlt", "--events", "20")), deadline=None)
    configs = []
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        monkeypatch.chdir(tmp_path / d)
        configs.append(steps.variants_step(ctx).config)
    assert configs[0] == configs[1] and configs[0].train_cwd is not None
    assert os.path.isdir(configs[0].train_cwd) and str(tmp_path) not in configs[0].train_cwd
