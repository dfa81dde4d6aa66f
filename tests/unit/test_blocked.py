"""stats.blocked against scipy: Friedman, the exact Wilcoxon signed-rank, chi-square tails, and
the leave-one-out ratios."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats as ss

from perflab.stats.blocked import _chi2_sf, friedman, loo_log_ratios, min_detectable, wilcoxon_greater


@pytest.mark.parametrize("df", [1, 2, 3, 8, 15, 255])
@pytest.mark.parametrize("x", [0.3, 4.0, 30.0, 400.0])
def test_chi2_tail_matches_scipy(df, x):
    assert _chi2_sf(x, df) == pytest.approx(float(ss.chi2.sf(x, df)), rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("k,n,rounded", [(3, 10, False), (16, 20, True), (256, 30, False), (5, 6, True)])
def test_friedman_matches_scipy(k, n, rounded):
    rng = np.random.default_rng(k)
    x = rng.normal(size=(k, n))
    x[0] += 0.5
    if rounded:
        x = np.round(x, 1)  # ties
    stat, p, used = friedman(x)
    ref = ss.friedmanchisquare(*x)
    assert used == n and stat == pytest.approx(ref.statistic) and p == pytest.approx(ref.pvalue, rel=1e-9)
    x[1, 2] = np.nan  # an incomplete round is left out
    assert friedman(x)[2] == n - 1


@pytest.mark.parametrize("n", [1, 5, 9, 20, 50])
def test_wilcoxon_exact_matches_scipy(n):
    d = np.random.default_rng(n).normal(0.3, 1, n)
    assert wilcoxon_greater(d) == pytest.approx(ss.wilcoxon(d, alternative="greater").pvalue, rel=1e-12)
    assert wilcoxon_greater([0.1] * 10) == pytest.approx(
        ss.wilcoxon([0.1] * 10, alternative="greater", method="approx", correction=True).pvalue)


def test_wilcoxon_extremes():
    assert wilcoxon_greater(np.arange(1, 11)) == 2 ** -10  # every round positive: the exact floor
    assert wilcoxon_greater([]) == 1.0 and wilcoxon_greater([0.0, 0.0]) == 1.0


def test_loo_log_ratios_are_against_the_median_of_the_others():
    rng = np.random.default_rng(0)
    x = rng.lognormal(size=(7, 6))
    x[2, 1] = np.nan
    x[:, 5] = np.nan
    x[0, 5] = 1.0  # a round with one value has no ratio
    d = loo_log_ratios(x)
    logs = np.log(x)
    for r in range(5):
        for c in range(7):
            if np.isnan(logs[c, r]):
                assert np.isnan(d[c, r])
                continue
            others = [logs[o, r] for o in range(7) if o != c and not np.isnan(logs[o, r])]
            assert d[c, r] == pytest.approx(logs[c, r] - np.median(others), abs=1e-12)
    assert np.isnan(d[:, 5]).all()
    two = loo_log_ratios([[1.0], [1.1]])
    assert two[1, 0] == pytest.approx(math.log(1.1)) and two[0, 0] == pytest.approx(-math.log(1.1))


def test_min_detectable():
    assert min_detectable(0.02, 5, 0.05 / 16) == math.inf  # 2^-4 > 0.003: no test can succeed
    mde = min_detectable(0.02, 16, 0.05 / 16)
    z = ss.norm.ppf(1 - 0.05 / 16) + ss.norm.ppf(0.8)
    assert mde == pytest.approx(z * 0.02 / math.sqrt(16 * 3 / math.pi))
    assert min_detectable(0.02, 64, 0.05 / 16) == pytest.approx(mde / 2)
