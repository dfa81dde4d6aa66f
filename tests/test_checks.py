"""Short runs of the verdict harnesses (bench/verdicts.py runs them at full length): a planted
effect is found and a null case stays quiet, at each study's default settings."""

from __future__ import annotations


def test_compare_finds_instances_campaigns_5pct_apart():
    from perflab.checks.compare_check import trial

    assert trial(0.05, seed=1) == (True, True)
    assert trial(0.0, seed=2)[0] is False


def test_modes_named_where_there_are_two_speeds_and_quiet_on_one():
    import random

    from perflab.checks.modes_check import trial

    rng = random.Random(3)
    assert sum(trial(True, rng) for _ in range(20)) >= 18
    assert sum(trial(False, rng) for _ in range(20)) <= 1


def test_run_tells_two_commands_2pct_apart():
    from perflab.checks.run_check import trial

    assert sum(trial(0.02, seed)[1] for seed in range(10)) >= 8
    assert sum(trial(0.0, 100 + seed)[0] for seed in range(10)) <= 2
