"""Short runs of the verdict harnesses (bench/verdicts.py runs them at full length): a planted
effect is found and a null case stays quiet, at each study's default settings."""

from __future__ import annotations


def test_compare_finds_instances_campaigns_5pct_apart():
    from perflab.checks.compare_check import trial

    assert trial(0.05, seed=1) == (True, True)
    assert trial(0.0, seed=2)[0] is False
