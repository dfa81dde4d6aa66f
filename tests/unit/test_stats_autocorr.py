"""stats.autocorr: the lag-1 autocorrelation, effective sample sizes and the intervals they give."""

from __future__ import annotations

import random

import pytest

from perflab.stats.autocorr import MAX_R, diff_ci, lag1, mean_ci


def test_lag1_is_pooled_over_segments_about_their_own_means():
    # each segment about its own mean: a step between segments is no correlation
    assert lag1([[1.0, 2.0, 3.0], [11.0, 12.0, 13.0]]) == 0.0  # (0 + 0) / 4
    assert lag1([[0.0, 1.0, 0.0, 1.0, 0.0]]) == 0.0  # negative: taken as 0
    assert lag1([[1.0, 1.0, 1.0]]) == 0.0 and lag1([[5.0, 6.0]]) == 0.0


def test_lag1_of_a_long_ar1_series_is_near_its_phi_after_the_bias_correction():
    rng = random.Random(3)
    x, seg = 0.0, []
    for _ in range(4000):
        x = 0.8 * x + rng.gauss(0, 1)
        seg.append(x)
    assert lag1([seg]) == pytest.approx(0.8, abs=0.03)
    pieces = [seg[i:i + 20] for i in range(0, 4000, 20)]  # short segments: biased low uncorrected
    assert lag1(pieces) == pytest.approx(0.8, abs=0.08)
    assert lag1([[float(i) for i in range(50)]]) == MAX_R


def test_mean_ci_of_independent_samples_is_students_t():
    from scipy.stats import t as student_t

    ci = mean_ci([[1.0, 3.0, 2.0, 4.0]], 0.95)  # lag-1 -0.15: independent
    assert ci.mean == 2.5 and ci.n_eff == 4 and ci.df == 3
    half = float(student_t.ppf(0.975, 3)) * (5 / 3 / 4) ** 0.5
    assert (ci.low, ci.high) == pytest.approx((2.5 - half, 2.5 + half))
    assert mean_ci([[1.0, 2.0]]) is None


def test_autocorrelation_widens_the_difference_of_means():
    rng = random.Random(5)
    x, seg = 0.0, []
    for _ in range(60):
        x = 0.8 * x + rng.gauss(0, 1)
        seg.append(x)
    shuffled = seg[:]
    rng.shuffle(shuffled)
    base = [[0.0, 0.1, -0.1, 0.05, -0.05, 0.0]]
    slow, fast = diff_ci([seg], base), diff_ci([shuffled], base)
    assert slow.mean == pytest.approx(fast.mean) and slow.high - slow.low > 1.5 * (fast.high - fast.low)
    assert diff_ci([[1.0, 1.0, 1.0]], [[1.0, 1.0, 1.0]]).low == 0.0
