"""stats.speeds: like with like where the pooled runs of a comparison have two speeds."""

import math
import random

import pytest

from perflab.stats.shift import ratio_ci
from perflab.stats.speeds import MIN_IN_SPEED, assign, same_speed, within_speeds
from perflab.stats.stratified import stratified_ratio_ci, van_elteren


def _sample(seed: int, n: int, slow: int, scale: float, spread: float = 0.01) -> list[float]:
    """n runs of about ``scale`` s, ``slow`` of them 1.48x slower (the 16-vCPU guest's two speeds)."""
    rng = random.Random(seed)
    return [round(scale * (1.48 if i < slow else 1.0) * rng.lognormvariate(0, spread), 6) for i in range(n)]


def test_equal_commands_with_different_shares_at_each_speed_are_not_called_different():
    # The same command, 6 of 20 runs slow in A and 14 of 20 in B: the mixture's median moved 40 %
    a, b = _sample(1, 20, 6, 0.1), _sample(2, 20, 14, 0.1)
    _, whole = ratio_ci(b, a)
    assert whole.low > 1.0  # the mixture says 'slower'
    w = within_speeds(a, b)
    assert w.two and not w.undecided and not w.notes
    assert [(len(s.a), len(s.b)) for s in w.speeds] == [(14, 6), (6, 14)]
    assert w.line() == "compared within two speeds: 50% and 50% of runs"
    assert w.low < 1 < w.high and w.p > 0.05
    # the numbers are the stratified test's on the speeds: van Elteren and its interval
    strata = [(tuple(x for x in a if x < 0.12), tuple(x for x in b if x < 0.12)),
              (tuple(x for x in a if x > 0.12), tuple(x for x in b if x > 0.12))]
    assert (w.ratio, w.low, w.high, w.level) == stratified_ratio_ci(strata)
    assert w.p == van_elteren(strata)[1]
    assert w.speeds[0].center == pytest.approx(0.1, rel=0.02) and w.speeds[1].center == pytest.approx(0.148, rel=0.02)


def test_a_three_percent_change_is_found_within_speeds_where_the_mixture_hides_it():
    a, b = _sample(3, 20, 14, 0.1), _sample(4, 20, 4, 0.103)  # B 3 % slower, but at the fast speed more
    mixed, whole = ratio_ci(b, a)
    assert mixed < 0.8 and whole.low < 1.0  # the mixture puts the slower one 29 % faster
    w = within_speeds(a, b)
    assert w.two and w.low > 1.0 and w.ratio == pytest.approx(1.03, abs=0.01) and w.p < 1e-4
    # pinned: the stratified Hodges-Lehmann ratio, its interval at its achieved level, van Elteren's p
    assert (w.ratio, w.low, w.high, w.level) == pytest.approx(
        (1.0273632350031048, 1.0185553999960562, 1.0341249224433582, 0.9503211648358252), rel=1e-12)
    assert w.p == pytest.approx(5.268988180774744e-06, rel=1e-9)


def test_one_speed_is_moses_interval_and_mann_whitney():
    a, b = _sample(5, 15, 0, 0.1), _sample(6, 15, 0, 0.102)
    w = within_speeds(a, b)
    ratio, ci = ratio_ci(b, a)
    assert not w.two and (w.ratio, w.low, w.high, w.level) == (ratio, ci.low, ci.high, ci.level)
    assert w.line() == "" and w.method.startswith("one speed")
    assert math.isnan(within_speeds(a, b, with_p=False).p)


def test_a_large_change_at_one_speed_is_a_change_not_two_speeds():
    a, b = _sample(7, 15, 0, 0.1), _sample(8, 15, 0, 0.148)
    fit, la, lb, shift = assign(a, b)
    assert fit is None and set(la) == set(lb) == {0}
    w = within_speeds(a, b)
    assert not w.two and w.ratio == pytest.approx(1.48, rel=0.01) and w.low > 1.4


def test_a_side_at_one_speed_is_compared_with_the_other_sides_runs_at_that_speed():
    a, b = _sample(9, 20, 8, 0.1), _sample(10, 20, 0, 0.1)  # B never ran slow
    w = within_speeds(a, b)
    assert w.two and [(len(s.a), len(s.b)) for s in w.speeds] == [(12, 20), (8, 0)]
    assert w.line() == "compared within the fast speed only (80% of runs): the other speed holds runs of one side only"
    assert w.low < 1 < w.high and not w.undecided
    (note,) = w.notes
    assert note.startswith("B never ran at the slow speed (20% of all runs): that speed is left out; "
                           f"about {math.ceil(MIN_IN_SPEED / 0.2)} runs a side")


def test_a_side_at_one_speed_between_the_others_two_is_undecided():
    a, b = _sample(11, 20, 10, 0.1), _sample(12, 20, 0, 0.122)  # B between A's 0.1 and 0.148
    w = within_speeds(a, b)
    assert w.undecided.startswith("one side ran at one speed") and "cannot be told from a change of speed" in w.undecided


def test_a_thin_speed_is_named_with_what_it_would_take():
    a = _sample(13, 20, 6, 0.1)
    b = _sample(14, 20, 2, 0.1)  # B ran twice at the slow speed
    w = within_speeds(a, b)
    assert w.two and any(n.startswith("B ran 2 times at the slow speed") and "it adds little" in n for n in w.notes)
    assert w.as_dict()["line"] == w.line() and w.as_dict()["speeds"][1]["n_b"] == 2


def test_bad_values_are_refused():
    with pytest.raises(ValueError):
        within_speeds([1.0, 0.0], [1.0, 2.0])


# A run of sleeps of 30 or 48 ms (the second 3 % longer) on this VM under a load average of 11:
# the load's tail fills the valley, so the pooled runs and B alone show one speed, A alone two.
LOADED_A = [33.7, 54.23, 49.44, 59.06, 51.78, 32.8, 37.44, 54.16, 41.58, 30.96, 30.94, 48.95, 76.33, 49.04, 49.14, 49.2, 33.51, 30.94, 31.12, 31.03, 31.07, 36.25, 30.95, 31.07, 31.12, 33.87, 64.21, 69.1, 69.25, 58.17, 57.16, 31.04, 31.02, 34.28, 49.89, 56.57, 47.64, 48.98, 50.2, 66.45]
LOADED_B = [32.1, 32.34, 31.78, 45.88, 36.14, 31.78, 40.01, 35.28, 46.58, 31.78, 50.35, 31.85, 60.92, 31.93, 50.52, 50.44, 31.92, 31.85, 55.28, 31.92, 50.4, 50.4, 50.67, 31.93, 49.06, 40.56, 55.41, 40.06, 45.79, 34.62, 53.84, 32.64, 52.63, 32.47, 62.13, 33.89, 40.69, 50.5, 31.79, 51.56]


def test_a_side_whose_runs_span_both_speeds_is_cut_between_them():
    fit, la, lb, _ = assign(LOADED_A, LOADED_B)
    assert fit is not None and set(lb) == {0, 1}  # not wholly at one speed: B spreads over both
    w = within_speeds(LOADED_A, LOADED_B)
    assert [(len(s.a), len(s.b)) for s in w.speeds] == [(19, 22), (21, 18)] and not w.undecided
    assert w.line() == "compared within two speeds: 51% and 49% of runs"
    assert (w.ratio, w.low, w.high) == pytest.approx((1.0221434898139945, 0.9525514771709938, 1.02907915993538), rel=1e-9)



def test_a_side_wholly_at_a_speed_the_other_reached_twice_is_undecided():
    # A baseline of `sleep 0.02` under a load average of 12 (2 of 15 runs took 31 ms) against
    # `sleep 0.03`: B is either the same code at A's rare slow speed or 50 % slower; the gate
    # passed it when B was compared with A's two slow runs alone.
    a = _sample(21, 13, 0, 0.0211) + _sample(22, 2, 0, 0.0316)
    b = _sample(23, 15, 0, 0.0317)
    w = within_speeds(a, b)
    assert w.undecided.startswith("B ran wholly at the slow speed, which A reached only 2 times: "
                                  "a change of 1.5")
    # three runs of A there make it a speed: B is compared with them
    w = within_speeds(_sample(21, 12, 0, 0.0211) + _sample(22, 3, 0, 0.0316), b)
    assert not w.undecided and w.ratio == pytest.approx(1.0, abs=0.02)


def test_pairs_at_one_speed_are_found_on_each_sides_own_levels():
    # base 0.100 s against a build at 0.028 s, each run slow (1.5x) at random: the kept rounds are
    # those whose two runs fell at the same speed, and their ratio is the builds' 0.28
    rng = random.Random(3)
    fa = [1.5 if rng.random() < 0.4 else 1.0 for _ in range(18)]
    fb = [1.5 if rng.random() < 0.4 else 1.0 for _ in range(18)]
    a = [0.100 * f * rng.lognormvariate(0, 0.01) for f in fa]
    b = [0.028 * f * rng.lognormvariate(0, 0.01) for f in fb]
    kept, fit = same_speed(a, b)
    assert fit is not None and kept == [x == y for x, y in zip(fa, fb)] and not all(kept)
    assert all(0.27 < y / x < 0.29 for x, y, k in zip(a, b, kept) if k)
    # one side at one speed: no round can be told apart, every one is kept
    assert same_speed(a, [0.028] * 18) == ([True] * 18, None)


def test_a_change_about_half_the_gap_between_the_speeds_is_split_on_each_sides_speeds():
    # two speeds 1.48x apart times a 1.2x change: four levels about equally spaced, which the
    # pooled runs show as one speed; each side alone shows its two (an instances scan's N = 2
    # against N = 3 past 2 CPUs, a 20 % gain, on the 16-vCPU guest)
    from perflab.stats.modes import detect_modes

    a, b = _sample(30, 20, 8, 0.1, 0.02), _sample(31, 20, 8, 0.1 / 1.2, 0.02)
    assert not detect_modes(a + b).multimodal
    assert detect_modes(a).multimodal and detect_modes(b).multimodal
    w = within_speeds(a, b)
    assert w.two and not w.undecided
    assert [(len(s.a), len(s.b)) for s in w.speeds] == [(12, 12), (8, 8)]
    assert w.ratio == pytest.approx(1 / 1.2, rel=0.02) and w.high < 0.9 and w.p < 1e-6
    # one speed on each side at this change: nothing to match, as before
    c, d = _sample(23, 20, 0, 0.1, 0.02), _sample(24, 20, 0, 0.1 / 1.2, 0.02)
    assert not within_speeds(c, d).two
