"""Short runs of the verdict harnesses (bench/verdicts.py runs them at full length): a planted
effect is found and a null case stays quiet, at each study's default settings."""

from __future__ import annotations


def test_compare_finds_instances_campaigns_5pct_apart():
    from perflab.checks.compare import trial

    assert trial(0.05, seed=1) == (True, True)
    assert trial(0.0, seed=2)[0] is False


def test_modes_named_where_there_are_two_speeds_and_quiet_on_one():
    import random

    from perflab.checks.modes import trial

    rng = random.Random(3)
    assert sum(trial("two-speed", 30, rng) for _ in range(20)) >= 18
    assert sum(trial("skewed", 30, rng) for _ in range(20)) <= 1


def test_run_tells_two_commands_2pct_apart():
    from perflab.checks.run import trial

    assert sum(trial(0.02, seed)[1] for seed in range(10)) >= 8
    assert sum(trial(0.0, 100 + seed)[0] for seed in range(10)) <= 2


def test_run_calls_nothing_on_runs_too_few_to_reach_its_level():
    # Equal commands were called different in 72 % of trials with one run each (no interval at
    # all) and 12.5 % with three each (a 90 % interval read as 95 %): see perflab/checks/run.py.
    from perflab.checks.run import trial

    assert sum(trial(0.0, 200 + seed, runs=1)[0] for seed in range(40)) == 0
    assert sum(trial(0.0, 300 + seed, runs=3)[0] for seed in range(40)) == 0
    # four each can reach 95 %: a large planted difference is found again
    assert sum(trial(0.5, 400 + seed, runs=4)[1] for seed in range(10)) >= 9
