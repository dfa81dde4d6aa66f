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
    # 150 samples a size (the modes harness, checks/modes.py, has docs/run.md's figures)
    alarms = sum(detect_modes(rng.lognormal(0, 0.05, n)).multimodal for _ in range(150))
    assert alarms / 150 <= 0.05


def test_a_skewed_sample_stays_one_mode_at_30_runs():
    # a sharp minimum and an exponential tail: two Gaussians fit the bulk and the tail better than
    # one, so the Gaussian null alone called it two modes (the ex-Gaussian null does not)
    rng = np.random.default_rng(1)
    samples = [1 + rng.exponential(0.02, 30) for _ in range(100)]
    assert sum(detect_modes(x, tail_null=False, min_gap=0.0).multimodal for x in samples) >= 8
    assert sum(detect_modes(x).multimodal for x in samples) <= 2


def test_harness_null_can_fail_the_rule_without_the_tail_null():
    # checks/modes.py's null is the shared 'skewed' model: the old rule fails it
    from perflab.checks.modes import rate

    old = rate("skewed", 30, runs=100, seed=1, detect=lambda xs: detect_modes(xs, tail_null=False, min_gap=0.0))
    assert old > 0.05


@pytest.mark.parametrize("model,n", [("skewed", 20), ("skewed", 30), ("skewed", 100), ("quiet", 30),
                                     ("loaded", 30)])
def test_harness_single_speed_models_stay_one_mode(model, n):
    from perflab.checks.modes import rate

    assert rate(model, n, runs=60, seed=1) <= 0.05


def test_harness_two_speed_model_found_at_30_runs():
    from perflab.checks.modes import rate, verdict_lines

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


def _tailed_two_speeds(rng, n: int, slow: float = 0.4, tau: float = 0.1):
    """A loaded machine's two speeds: each a sharp floor (30 and 48 ms) plus an exponential delay
    (mean 10 % of the floor); (times, which runs are slow)."""
    k = round(slow * n)
    truth = np.r_[np.zeros(n - k, int), np.ones(k, int)]
    floors = np.where(truth == 1, 0.048, 0.030)
    return floors * np.exp(rng.exponential(tau, n) + rng.normal(0, 0.003, n)), truth


def test_two_speeds_each_with_a_tail_are_found():
    # the ex-Gaussian null (one speed with a tail) fits a loaded machine's two skewed speeds better
    # than two Gaussians: the rule without two tailed speeds called them one speed in 17 of 40
    rng = np.random.default_rng(7)
    samples = [_tailed_two_speeds(rng, 60) for _ in range(40)]
    old = sum(detect_modes(x, tailed=False).multimodal for x, _ in samples)
    found = [detect_modes(x) for x, _ in samples]
    assert old <= 28
    assert sum(m.multimodal for m in found) >= 34
    for (x, truth), m in zip(samples, found):
        if m.multimodal:
            assert 0.029 < m.modes[0].center < 0.036 and 0.046 < m.modes[1].center < 0.058
            assert np.mean(np.asarray(m.labels) == truth) >= 0.9  # each run at its own floor's speed


@pytest.mark.parametrize("tau", [0.03, 0.1, 0.3])
def test_one_speed_with_a_long_tail_stays_one_speed(tau):
    # the tailed alternative has two more parameters than the tailed null: a floor and a long
    # tail (a machine loaded harder) must not look like two speeds
    rng = np.random.default_rng(int(tau * 100))
    alarms = sum(detect_modes(0.03 * np.exp(rng.exponential(tau, 60) + rng.normal(0, 0.003, 60))).multimodal
                 for _ in range(60))
    assert alarms <= 3


def test_em_starts_run_together_give_each_start_its_own_fit():
    # stats.modes runs its EM starts as the rows of one array; each row must stop where, and
    # return what, that start alone does (one row stops early: its component empties)
    from perflab.stats.modes import _fits

    rng = np.random.default_rng(5)
    x = np.log(np.r_[rng.lognormal(0, 0.03, 20), rng.lognormal(0.3, 0.03, 10)])
    starts = [(-0.1, 0.0, 0.02, 0.5), (0.0, 0.3, 0.001, 0.3), (-0.05, 0.2, 0.01, 0.1), (0.0, 5.0, 1e-4, 0.5)]
    together = _fits(x, starts)
    for start, row in zip(starts, together):
        alone = _fits(x, [start])[0]
        assert row[:5] == alone[:5] and np.array_equal(row[5], alone[5])
    assert len({round(r[0], 6) for r in together}) >= 2  # the starts did not all end alike
