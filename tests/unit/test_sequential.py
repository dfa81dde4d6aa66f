"""stats.sequential: alpha-spending boundaries against published tables, their error rate over
all looks by simulation, and the decision rule with its margin."""

import math

import pytest

from perflab.stats import sequential as seq


def test_obrien_fleming_boundaries_match_the_published_table():
    # Lan-DeMets O'Brien-Fleming, 5 equal looks, 2.5 % a side (ldbounds' bounds() example;
    # gsDesign's sfLDOF): 4.8769 3.3569 2.6803 2.2898 2.0310
    cs = seq.boundaries([0.2, 0.4, 0.6, 0.8, 1.0])
    assert [round(c, 3) for c in cs] == [4.877, 3.357, 2.680, 2.290, 2.031]


def test_pocock_boundaries_match_the_published_table():
    # Kim & DeMets' Pocock-type spending, 5 equal looks, 5 % two-sided
    cs = seq.boundaries([0.2, 0.4, 0.6, 0.8, 1.0], kind="pocock")
    assert [round(c, 2) for c in cs] == [2.44, 2.43, 2.41, 2.40, 2.39]


def test_one_look_is_the_fixed_sample_test():
    assert seq.boundaries([1.0]) == pytest.approx([1.959964], abs=1e-5)
    assert seq.nominal_level(1.959964) == pytest.approx(0.95, abs=1e-6)


def test_the_first_look_spends_exactly_its_share():
    # one look at t = 1/2 spends 2 (2 - 2 Phi(z_0.9875 / sqrt(0.5))) = 0.00305 in all
    c = seq.boundaries([0.5, 1.0])[0]
    assert 1 - seq.nominal_level(c) == pytest.approx(seq.spent(0.5), rel=1e-9)
    assert seq.spent(0.5) == pytest.approx(2 * math.erfc(2.241403 / math.sqrt(0.5) / math.sqrt(2)), rel=1e-5)
    assert seq.spent(1.0) == pytest.approx(0.05)
    assert seq.spent(1.0, kind="pocock") == pytest.approx(0.05)


def test_false_alarms_over_all_looks_stay_at_alpha():
    # Brownian motion in the information, 200 000 paths: crossing any boundary at the null
    # happens in 5 % of them; at the nominal 5 % each look it is far more
    import numpy as np

    runs = seq.schedule(10, 300)
    design = seq.looks(runs, 300)
    rng = np.random.default_rng(1)
    t = np.array([lk.fraction for lk in design])
    steps = rng.standard_normal((200_000, len(t))) * np.sqrt(np.diff(t, prepend=0.0))
    z = np.abs(np.cumsum(steps, axis=1)) / np.sqrt(t)
    crossed = (z > np.array([lk.boundary for lk in design])).any(axis=1).mean()
    naive = (z > 1.959964).any(axis=1).mean()
    assert abs(crossed - 0.05) < 0.003
    assert naive > 0.15


def test_information_fraction_against_a_fixed_side():
    # I(n) = 1 / (1/n + 1/m): 10 new runs against 20 fixed hold 6.667, the budget's 300 hold 18.75
    assert seq.information(10, 20) == pytest.approx(20 / 3)
    assert seq.fraction(10, 300, fixed=20) == pytest.approx((20 / 3) / (1 / (1 / 300 + 1 / 20)))
    assert seq.fraction(10, 300) == pytest.approx(10 / 300) and seq.fraction(400, 300, 20) == 1.0
    runs = seq.schedule(10, 300)
    # both sides growing alike is the form without a fixed side: the same boundaries, exactly
    assert seq.looks(runs, 300, fixed=None) == seq.looks(runs, 300)
    # a fixed side far larger than the budget leaves the fractions (and boundaries) at runs/budget
    far = seq.looks(runs, 300, fixed=10 ** 9)
    assert [lk.boundary for lk in far] == pytest.approx([lk.boundary for lk in seq.looks(runs, 300)], rel=1e-5)
    # against 20 fixed runs the early looks hold far more of the information, so spend more
    near = seq.looks(runs, 300, fixed=20)
    assert near[0].fraction > 10 * far[0].fraction and near[0].boundary < far[0].boundary
    assert seq.design_at(10, 300, 35, fixed=20) == list(near[:4])
    with pytest.raises(ValueError):
        seq.information(0, 20)


def test_false_alarms_over_all_looks_with_a_fixed_baseline_stay_at_alpha():
    # A baseline of m = 20 runs drawn once per trial, new runs added look by look; z at each look
    # the difference of means over its SD sqrt(1/n + 1/m) (unit variance), 200 000 trials
    import numpy as np

    m, budget = 20, 120
    runs = seq.schedule(10, budget)
    rng = np.random.default_rng(2)
    trials = 200_000
    base = rng.standard_normal(trials) / np.sqrt(m)  # the baseline's mean
    sums, done, z = np.zeros(trials), 0, []
    for n in runs:
        sums += rng.standard_normal((trials, n - done)).sum(axis=1)
        done = n
        z.append(np.abs(sums / n - base) / np.sqrt(1 / n + 1 / m))
    z = np.array(z).T
    by_information = np.array([lk.boundary for lk in seq.looks(runs, budget, fixed=m)])
    assert abs((z > by_information).any(axis=1).mean() - 0.05) < 0.003
    # the fractions of runs alone misplace the spending: the same looks then spend less than 5 %
    # (4.65 % here: conservative, runs wasted)
    by_runs = np.array([lk.boundary for lk in seq.looks(runs, budget)])
    assert (z > by_runs).any(axis=1).mean() < 0.048


def test_schedule_grows_to_the_budget():
    assert seq.schedule(10, 60) == [10, 15, 23, 35, 53, 60]
    assert seq.schedule(10, 10) == [10]
    assert seq.schedule(20, 12) == [12]
    with pytest.raises(ValueError):
        seq.schedule(0, 10)


def test_a_budget_cut_short_spends_what_is_left_at_its_last_look():
    design = seq.looks([10, 15, 23], 300)
    assert design[-1].fraction == 1.0
    assert design[-1].boundary < 2.1  # the last look tests at about the whole alpha


def test_decide_shows_a_change_rules_one_out_or_leaves_it_open():
    assert seq.decide(1.05, 1.02, 1.08, 0.01) == "larger"
    assert seq.decide(0.95, 0.92, 0.98, 0.01) == "smaller"
    assert seq.decide(1.001, 0.995, 1.008, 0.01) == "within"
    # inside the margin and excluding 1: a change smaller than the margin, so none of 1 % or more
    assert seq.decide(1.004, 1.001, 1.008, 0.01) == "within"
    assert seq.decide(1.004, 1.001, 1.02, 0.01) is None  # significant, but under 1 % as a point
    assert seq.decide(1.0, 0.98, 1.03, 0.01) is None
    assert seq.decide(math.nan, 0.9, 1.1, 0.01) is None


def test_runs_needed_scales_with_the_square_of_the_width():
    # half-width 2 % in logs at 40 runs, a ratio of 1: ruling out 1 % needs (2/1)^2 = 4x
    lo, hi = math.exp(-0.02), math.exp(0.02)
    assert seq.runs_needed(40, 1.0, lo, hi, math.expm1(0.01)) == 160
    # a ratio 1.5 % up, 2 % below it and 2 % above, margin 1 %: showing it needs the side towards
    # 1 under 1.5 % ((2/1.5)^2 = 1.78x); ruling it out is impossible but costed at half the margin
    n = seq.runs_needed(40, math.exp(0.015), math.exp(-0.005), math.exp(0.035), math.expm1(0.01))
    assert n == math.ceil(40 * (0.02 / 0.015) ** 2) == 72
    # an interval longer towards 1 than away (1.07 [0.993, 1.10]): the long side decides
    n = seq.runs_needed(300, 1.07, 0.993, 1.10, 0.01)
    assert n == math.ceil(300 * ((math.log(1.07) - math.log(0.993)) / math.log(1.07)) ** 2) == 366


def test_design_at_a_planned_look_is_the_plans_prefix_and_a_cut_budget_spends_the_rest():
    plan = seq.planned(10, 300)
    assert [lk.runs for lk in plan] == seq.schedule(10, 300)
    assert seq.design_at(10, 300, 120) == list(plan[:7])  # 10, 15, 23, 35, 53, 80, 120
    cut = seq.design_at(10, 300, 100, final=True)  # a time limit after 100 rounds
    assert [lk.runs for lk in cut] == [10, 15, 23, 35, 53, 80, 100] and cut[-1].fraction == 1.0
    assert cut[:-1] == list(plan[:6]) and 0.95 < cut[-1].level < 0.97
    assert seq.design_at(10, 300, 300, final=True) == list(plan)
