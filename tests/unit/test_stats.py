"""perflab.stats against numbers computed by hand in each test."""

from __future__ import annotations

import itertools
import math

import pytest

from perflab.errors import PerflabError
from perflab.stats import (
    bootstrap_median_ci,
    cliffs_delta,
    compare,
    cv,
    holm,
    knee,
    mad,
    mad_outliers,
    mann_whitney,
    median,
    modified_z_scores,
    ratio_of_medians,
    stddev,
    summary,
)

PI_DIGITS = [3, 1, 4, 1, 5, 9, 2, 6]  # sorted: 1 1 2 3 4 5 6 9


def test_summary_of_known_list():
    s = summary(PI_DIGITS)
    assert s.n == 8
    assert s.mean == 31 / 8
    assert s.median == (3 + 4) / 2
    # deviations from 3.875 squared sum to 52.875; Bessel's n-1 = 7
    assert s.stddev == pytest.approx(math.sqrt(52.875 / 7), rel=1e-12)
    assert (s.min, s.max) == (1.0, 9.0)
    # type 7: position (n-1)p = 1.75 -> 1 + 0.75*(2-1); 5.25 -> 5 + 0.25*(6-5)
    assert (s.q1, s.q3) == (1.75, 5.25)
    # |x - 3.5| = .5 2.5 .5 2.5 1.5 5.5 1.5 2.5 -> sorted middle pair 1.5, 2.5
    assert s.mad == 2.0
    assert s.iqr == 3.5
    assert s.cv == pytest.approx(s.stddev / s.mean)


def test_single_functions_agree_with_summary():
    assert median([5, 1, 3]) == 3.0
    assert mad([1, 2, 3, 4, 100]) == 1.0
    assert stddev([2, 4, 4, 4, 5, 5, 7, 9]) == pytest.approx(math.sqrt(32 / 7))
    assert cv([2, 4, 4, 4, 5, 5, 7, 9]) == pytest.approx(math.sqrt(32 / 7) / 5)
    assert summary([7.0]).stddev == 0.0


def test_empty_and_nan_rejected():
    with pytest.raises(ValueError):
        summary([])
    with pytest.raises(ValueError):
        median([1.0, float("nan")])


def test_modified_z_flags_planted_outlier():
    xs = [1, 2, 3, 4, 100]  # median 3, MAD 1
    z = modified_z_scores(xs)
    assert z[4] == pytest.approx(0.6745 * 97)
    assert z[0] == pytest.approx(0.6745 * -2)
    assert mad_outliers(xs) == [4]
    # 0.6745*2 = 1.349 > 1.0: a lower threshold flags the 1 and the 5th value, not the rest
    assert mad_outliers(xs, threshold=1.0) == [0, 4]


def test_modified_z_when_mad_is_zero():
    xs = [5, 5, 5, 5, 5, 6, 100]  # MAD 0: fallback to 1.253314 * mean |dev| = 1.253314*96/7
    z = modified_z_scores(xs)
    assert z[6] == pytest.approx(95 / (1.253314 * 96 / 7))
    assert mad_outliers(xs) == [6]
    assert mad_outliers([3, 3, 3, 3]) == []


def _hand_u(a, b):
    return sum(1.0 if x > y else 0.5 if x == y else 0.0 for x in a for y in b)


def test_mann_whitney_u_matches_hand_count_and_exact_p():
    a, b = [1, 4, 6], [2, 3, 5, 7]
    u, p = mann_whitney(a, b)
    # 1 beats none, 4 beats 2 and 3, 6 beats 2, 3 and 5
    assert u == 5.0 == _hand_u(a, b)
    # exact null distribution: every way of choosing a's 3 ranks out of 7
    us = [sum(r - i for i, r in enumerate(sorted(c))) for c in itertools.combinations(range(7), 3)]
    lower = sum(v <= u for v in us) / len(us)
    upper = sum(v >= u for v in us) / len(us)
    assert p == pytest.approx(min(1.0, 2 * min(lower, upper)))


def test_mann_whitney_ties_and_all_equal():
    assert mann_whitney([1, 2, 2], [2, 3])[0] == 1.0  # two 2-vs-2 ties count a half each
    assert mann_whitney([1, 1, 1], [1, 1]) == (3.0, 1.0)


def test_cliffs_delta_hand_count():
    # 5 pairs a>b, 7 pairs a<b out of 12
    assert cliffs_delta([1, 4, 6], [2, 3, 5, 7]) == pytest.approx(-2 / 12)
    assert cliffs_delta([10, 11], [1, 2, 3]) == 1.0
    assert cliffs_delta([1, 2], [1, 2]) == 0.0


def test_holm_known_vector():
    # sorted: .005*4=.02, .01*3=.03, .03*2=.06, .04*1=.04 -> running max keeps .06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.6]) == [1.0, 1.0]
    assert holm([]) == []


def test_bootstrap_ci_is_deterministic_and_contains_median():
    xs = [10.2, 9.8, 10.1, 10.0, 10.4, 9.9, 10.3, 10.05, 9.95, 11.5]
    ci1 = bootstrap_median_ci(xs, seed=7)
    ci2 = bootstrap_median_ci(xs, seed=7)
    assert ci1 == ci2
    lo, hi = ci1
    assert lo <= median(xs) <= hi
    assert 9.8 <= lo < hi <= 11.5
    # a wider confidence level gives an interval at least as wide
    lo99, hi99 = bootstrap_median_ci(xs, confidence=0.99, seed=7)
    assert lo99 <= lo and hi99 >= hi
    assert bootstrap_median_ci([4.0]) == (4.0, 4.0)
    assert bootstrap_median_ci([4.0, 4.0, 4.0]) == (4.0, 4.0)


def test_ratio_of_medians():
    r = ratio_of_medians([2.0, 2.0, 2.0], [1.0, 1.0, 1.0, 1.0])
    assert (r.ratio, r.lo, r.hi) == (2.0, 2.0, 2.0)
    a = [2.0, 2.2, 1.8, 2.1, 1.9, 2.05]
    b = [1.0, 1.1, 0.9, 1.05, 0.95, 1.0]
    r = ratio_of_medians(a, b, seed=3)
    assert r.ratio == pytest.approx(2.025 / 1.0)
    assert r.lo <= r.ratio <= r.hi
    assert r == ratio_of_medians(a, b, seed=3)
    with pytest.raises(PerflabError):
        ratio_of_medians([1.0], [0.0, 0.0])


def test_compare_clear_difference_and_no_difference():
    a = [2.0, 2.2, 1.8, 2.1, 1.9, 2.05, 2.02, 1.98]
    b = [1.0, 1.1, 0.9, 1.05, 0.95, 1.0, 1.01, 0.99]
    c = compare(a, b)
    assert c.significant and c.p_value < 0.01
    assert c.effect_size == 1.0 and c.effect_magnitude == "large"
    assert c.lo > 1.5
    same = compare(b, list(b))
    assert not same.significant and same.effect_size == 0.0 and same.ratio == 1.0


def _hinge(x, k, noise, seed):
    import numpy as np

    rng = np.random.default_rng(seed)
    return [min(v, k) * 100.0 * (1 + rng.normal(0, noise)) for v in x]


def test_knee_found_where_planted():
    x = list(range(1, 17))
    k = knee(x, _hinge(x, 8, 0.02, seed=1))
    assert k is not None
    assert abs(k.x - 8) <= 1
    assert k.slope_before == pytest.approx(100, rel=0.1)
    assert abs(k.slope_after) < 10
    assert k.score > 10
    # same knee when the points arrive unsorted; index refers to x order
    order = [5, 0, 15, 3, 9, 1, 12, 2, 4, 6, 7, 8, 10, 11, 13, 14]
    y = _hinge(x, 8, 0.02, seed=1)
    k2 = knee([x[i] for i in order], [y[i] for i in order])
    assert k2 is not None and k2.x == k.x and k2.index == k.index


def test_knee_small_scan_like_thread_counts():
    x = [1, 2, 3, 4, 5, 6, 7, 8]
    k = knee(x, _hinge(x, 4, 0.03, seed=5))
    assert k is not None and abs(k.x - 4) <= 1


def test_knee_none_on_flat_linear_and_noise():
    import numpy as np

    x = list(range(1, 21))
    assert knee(x, [5.0] * 20) is None
    assert knee(x, [3.0 * v + 1 for v in x]) is None
    rng = np.random.default_rng(42)
    assert knee(x, list(rng.normal(5.0, 1.0, 20))) is None
    assert knee(x, [2.0 * v + e for v, e in zip(x, rng.normal(0, 1.0, 20))]) is None
    assert knee([1, 2, 3], [1, 5, 5]) is None  # too few points to tell


def test_median_ci_reports_the_level_it_has():
    from perflab.stats import median_ci
    from perflab.stats.interval import coverage

    assert coverage(3, 1) == 0.75 and coverage(2, 1) == 0.5
    ci = median_ci([3.0, 1.0, 2.0])
    assert (ci.low, ci.high, ci.level) == (1.0, 3.0, 0.75)
    ci = median_ci(range(1, 21))  # n=20: [x(6), x(15)] covers 95.86 %
    assert (ci.low, ci.high) == (6.0, 15.0) and abs(ci.level - 0.958610) < 1e-6
    assert ci.as_dict() == {"low": 6.0, "high": 15.0, "level": ci.level}


def test_median_ci_coverage_by_simulation():
    """The stated level is the real one: 2,000 log-normal samples of each size."""
    import random

    from perflab.stats import median_ci

    rng = random.Random(1)
    true_median = 1.0  # of lognormvariate(0, s)
    for n in (3, 5, 10, 30):
        hits, level = 0, None
        for _ in range(2000):
            ci = median_ci([rng.lognormvariate(0, 0.3) for _ in range(n)])
            level = ci.level
            hits += ci.low <= true_median <= ci.high
        assert abs(hits / 2000 - level) < 0.03, (n, hits / 2000, level)


def test_van_elteren_one_stratum_is_mann_whitney_and_null_is_calibrated():
    import random

    from perflab.stats import mann_whitney
    from perflab.stats.stratified import pooled_ratio, van_elteren

    rng = random.Random(1)
    a = [rng.random() for _ in range(30)]
    b = [rng.random() + 0.2 for _ in range(25)]
    z, p = van_elteren([(a, b)])
    assert z > 0 and abs(p - mann_whitney(b, a)[1]) < 0.001  # scipy adds a continuity correction
    hits = sum(van_elteren([([rng.lognormvariate(0, 0.03) for _ in range(5)],
                             [rng.lognormvariate(0, 0.03) for _ in range(5)]) for _ in range(8)])[1] < 0.05
               for _ in range(1000))
    assert 0.03 < hits / 1000 < 0.07
    strata = [([1.0, 1.1, 0.9], [2.0, 2.2, 1.8]), ([10.0, 11.0, 9.0], [20.0, 22.0, 18.0])]
    ratio, lo, hi = pooled_ratio(strata)
    assert abs(ratio - 2.0) < 1e-9 and lo <= 2.0 <= hi


@pytest.mark.parametrize("level", [0.9, 0.95, 0.975, 1 - 0.05 / 3, 0.99])
def test_runs_to_reach_is_the_fewest_runs_whose_ratio_interval_reaches_the_level(level):
    from perflab.stats.shift import ratio_ci, runs_to_reach

    n = runs_to_reach(level)
    a, b = [1.0 + 0.01 * i for i in range(n)], [2.0 + 0.01 * i for i in range(n)]
    assert ratio_ci(b, a, level)[1].level >= level
    assert ratio_ci(b[:-1], a[:-1], level)[1].level < level


def test_the_ratio_without_numpy_is_numpys():
    # Small samples take the standard library's path (stats/shift.py, _PURE_PAIRS); it must give
    # what the numpy path gives: the same null distribution float for float, and the same ratio
    # and interval to the last bit or two (numpy's log and exp may round otherwise than libm's).
    import random

    from perflab.stats import shift

    for m in range(1, 21):
        for n in range(1, 400 // m + 1):
            assert shift.u_cdf_exact(m, n) == list(shift.u_cdf(m, n)), (m, n)
    rng = random.Random(11)
    for _ in range(300):
        m, n = rng.randint(1, 20), rng.randint(1, 20)
        a = [rng.lognormvariate(0, 0.3) for _ in range(m)]
        b = [rng.lognormvariate(0.1, 0.3) for _ in range(n)]
        level = rng.choice([0.8, 0.9, 0.95, 0.99])
        assert m * n <= shift._PURE_PAIRS
        pure = shift.ratio_ci(a, b, level)
        old, shift._PURE_PAIRS = shift._PURE_PAIRS, 0
        try:
            vec = shift.ratio_ci(a, b, level)
        finally:
            shift._PURE_PAIRS = old
        assert pure[1].level == vec[1].level
        for x, y in ((pure[0], vec[0]), (pure[1].low, vec[1].low), (pure[1].high, vec[1].high)):
            assert abs(x - y) <= 1e-15 * abs(y)
    for bad in ([1.0, 0.0], [1.0, float("nan")], [1.0, -2.0], [1.0, float("inf")]):
        with pytest.raises(ValueError, match="positive, finite"):
            shift.ratio_ci(bad, [1.0, 2.0])
