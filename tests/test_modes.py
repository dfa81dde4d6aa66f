"""stats.modes: two speeds found, and the false-alarm rate on unimodal samples, by simulation."""

from __future__ import annotations

import numpy as np
import pytest

from perflab.stats.modes import CAUSE, Modes, detect_modes


def test_two_speeds_found_with_shares_and_labels():
    rng = np.random.default_rng(4)
    fast, slow = rng.lognormal(np.log(1 / 190), 0.03, 18), rng.lognormal(np.log(1 / 128), 0.03, 12)
    xs = np.concatenate([fast, slow])
    rng.shuffle(xs)
    m = detect_modes(xs)
    assert m.multimodal and [md.n for md in m.modes] == [18, 12]
    assert m.modes[0].share == pytest.approx(0.6) and 1 / 200 < m.modes[0].center < 1 / 180
    assert all((lab == 1) == (x > 1 / 160) for x, lab in zip(xs, m.labels))
    assert m.bic_gain > 6 and m.separation > 2.5
    assert m.line().startswith("2 modes: ") and "virtual CPU" in CAUSE
    back = Modes.from_dict(m.as_dict())
    assert back.modes == m.modes and back.multimodal


@pytest.mark.parametrize("n", [10, 30, 100])
def test_false_alarms_on_unimodal_lognormal_below_5_percent(n):
    rng = np.random.default_rng(n)
    alarms = sum(detect_modes(rng.lognormal(0, 0.05, n)).multimodal for _ in range(300))
    assert alarms / 300 <= 0.05


def test_a_skewed_sample_stays_one_mode_at_30_runs():
    # a sharp minimum and an exponential tail: two Gaussians fit the bulk and the tail better than
    # one, so the Gaussian null alone called it two modes (the ex-Gaussian null does not)
    rng = np.random.default_rng(1)
    samples = [1 + rng.exponential(0.02, 30) for _ in range(100)]
    assert sum(detect_modes(x, tail_null=False, min_gap=0.0).multimodal for x in samples) >= 8
    assert sum(detect_modes(x).multimodal for x in samples) <= 2


def test_harness_null_can_fail_the_rule_without_the_tail_null():
    # checks/modes_check.py's null is the shared 'skewed' model: the old rule fails it
    from perflab.checks.modes_check import rate

    old = rate("skewed", 30, runs=100, seed=1, detect=lambda xs: detect_modes(xs, tail_null=False, min_gap=0.0))
    assert old > 0.05


@pytest.mark.parametrize("model,n", [("skewed", 20), ("skewed", 30), ("skewed", 100), ("quiet", 30),
                                     ("loaded", 30)])
def test_harness_single_speed_models_stay_one_mode(model, n):
    from perflab.checks.modes_check import rate

    assert rate(model, n, runs=60, seed=1) <= 0.05


def test_harness_two_speed_model_found_at_30_runs():
    from perflab.checks.modes_check import rate, verdict_lines

    assert rate("two-speed", 30, runs=40, seed=1) >= 0.9
    lines = verdict_lines(runs=2)
    assert any(ln.startswith("verdict-check: modes-two-speed-n30 detection=") for ln in lines)
    assert any(ln.startswith("verdict-check: modes-skewed-n20 false_positive=") for ln in lines)


def test_detection_of_a_10_percent_step_needs_enough_runs():
    rng = np.random.default_rng(2)

    def sample(n):
        k = n // 5
        return np.concatenate([rng.lognormal(0, 0.02, n - k), rng.lognormal(np.log(1.1), 0.02, k)])

    assert sum(detect_modes(sample(100)).multimodal for _ in range(100)) >= 80
    assert sum(detect_modes(sample(10)).multimodal for _ in range(100)) <= 5  # 2 slow runs: too few


def test_small_or_constant_samples_are_one_mode_and_bad_values_rejected():
    assert not detect_modes([1.0] * 20).multimodal
    assert detect_modes([1.0, 2.0, 1.0]).modes[0].n == 3
    with pytest.raises(ValueError):
        detect_modes([1.0, 0.0, 2.0])
