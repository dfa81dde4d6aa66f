"""Measuring until the answer is decided: a group-sequential design with alpha spending.

A study that looks at its runs after every batch and stops at the first significant look tests
many times: at a nominal 5 % per look, ten looks at a null call a difference in about 19 % of
campaigns (Armitage, McPherson & Rowe 1969). The error spending approach of Lan & DeMets (1983)
keeps the false-alarm rate over all looks at alpha: each look k, at information fraction t_k
(here the runs so far over the budget's runs), may spend alpha(t_k) - alpha(t_(k-1)) of it, and
its boundary c_k is the |Z| that the standardised statistic crosses, given that it crossed no
earlier boundary, with exactly that probability under the null. The statistic is treated as
Brownian motion in the information (independent increments), which a rank statistic such as
Mann-Whitney's or Wilcoxon's is asymptotically (Jennison & Turnbull 2000, ch. 11 and 13); the
boundaries come from the recursive numerical integration of Armitage et al. (1969), as in
Jennison & Turnbull (2000), ch. 19.

Spending functions (two-sided, ``alpha`` over all looks):

- O'Brien-Fleming type (``"obf"``, the default): each side spends
  alpha/2 (t) = 2 - 2 Phi(z_(1-alpha/4) / sqrt(t)), Lan & DeMets' form a side.
  Early looks spend almost nothing, so only a large effect stops early, and the last look tests
  at nearly alpha (K = 5 equally spaced looks at 5 %: |Z| > 4.877, 3.357, 2.680, 2.290, 2.031).
- Pocock type (``"pocock"``): alpha(t) = alpha ln(1 + (e - 1) t) (Kim & DeMets 1987): about equal
  boundaries (K = 5: 2.44 down to 2.39), earlier stops at the cost of the last look.

The interval a study reports at look k is the repeated confidence interval (Jennison & Turnbull
1989) at the look's nominal level 1 - 2 (1 - Phi(c_k)): all of them together cover the true
ratio with probability 1 - alpha, so a study may stop at whichever look decides, either way:

- ``larger`` / ``smaller``: the interval excludes 1 and the ratio is at least the minimum effect
  (a change is shown);
- ``within``: the interval lies inside [1 / (1 + m), 1 + m] (an equivalence claim at the stated
  level: no change of m or more; the two one-sided tests of Schuirmann 1987 at this level);
- ``None``: undecided; where the budget ran out, ``runs_needed`` says about how many runs would
  decide it.

Where the budget ends before its planned information (a time budget cut short), the last look
is taken as t = 1 and spends what is left (Lan & DeMets 1983).

The information fraction is the information so far over the budget's. Where both sides grow
alike (every command, build or CPU once a round) it is the runs so far over the budget's. Where
one side is fixed at m runs and the other grows (the gate: a stored baseline against new runs),
the information of a comparison of n new runs is I(n) = 1 / (1/n + 1/m) (the inverse variance
of a difference of two means, up to the common variance), so t = I(n) / I(N) for a budget of N:
it grows fast while n is small against m and slowly once the baseline's m runs dominate the
variance. The statistics at the looks keep the canonical joint distribution, corr(Z_i, Z_j) =
sqrt(I_i / I_j) (the baseline's mean is shared, the new runs nested), so the spending boundaries
hold at these fractions (Jennison & Turnbull 2000, ch. 3 and 7; ``fixed`` below).

References: Lan, K.K.G. & DeMets, D.L. (1983) Discrete sequential boundaries for clinical
trials, Biometrika 70, 659-663. O'Brien, P.C. & Fleming, T.R. (1979) A multiple testing
procedure for clinical trials, Biometrics 35, 549-556. Pocock, S.J. (1977) Group sequential
methods in the design and analysis of clinical trials, Biometrika 64, 191-199. Kim, K. &
DeMets, D.L. (1987) Design and analysis of group sequential tests based on the type I error
spending rate function, Biometrika 74, 149-154. Jennison, C. & Turnbull, B.W. (1989) Interim
analyses: the repeated confidence interval approach, JRSS B 51, 305-361; (2000) Group
Sequential Methods with Applications to Clinical Trials, Chapman & Hall.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Sequence

SPENDING = ("obf", "pocock")
GRID = 401  # integration points per look (odd, for Simpson's rule): boundaries to about 1e-4
_MAX_Z = 40.0  # a look that may spend nothing: a boundary no statistic crosses


def _phi_cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def _z_quantile(p: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(p))


def spent(t: float, alpha: float = 0.05, kind: str = "obf") -> float:
    """The alpha spent by information fraction t (0..1) under the named spending function."""
    if kind not in SPENDING:
        raise ValueError(f"spending function must be one of {', '.join(SPENDING)}, not {kind!r}")
    t = min(max(t, 0.0), 1.0)
    if t == 0.0:
        return 0.0
    if kind == "pocock":
        return alpha * math.log(1.0 + (math.e - 1.0) * t)
    # each side spends alpha/2 by Lan & DeMets' form, as published tables (ldbounds, gsDesign's
    # sfLDOF with alpha/2 a side) do: K = 5 equal looks give 4.877 ... 2.031
    return min(alpha, 2.0 * (2.0 - 2.0 * _phi_cdf(_z_quantile(1.0 - alpha / 4.0) / math.sqrt(t))))


def boundaries(times: Sequence[float], alpha: float = 0.05, kind: str = "obf") -> list[float]:
    """Two-sided |Z| boundaries c_1..c_K at information fractions ``times`` (increasing, the last
    at most 1), each crossing with probability alpha(t_k) - alpha(t_(k-1)) under the null given
    no earlier crossing (recursive numerical integration, Simpson's rule on GRID points)."""
    import numpy as np
    from scipy.optimize import brentq
    from scipy.stats import norm

    ts = [float(t) for t in times]
    if not ts or any(b <= a for a, b in zip(ts, ts[1:])) or ts[0] <= 0 or ts[-1] > 1 + 1e-12:
        raise ValueError("information fractions must increase within (0, 1]")
    out: list[float] = []
    grid: Any = None  # the density of the score S = Z sqrt(t) on the continuation region
    weights: Any = None
    dens: Any = None
    prev_t, prev_spent = 0.0, 0.0
    for t in ts:
        budget = spent(t, alpha, kind) - prev_spent
        prev_spent += budget
        if grid is None:
            c = _MAX_Z if budget <= 1e-15 else float(norm.isf(budget / 2.0))
        else:
            sd = math.sqrt(t - prev_t)

            def crossed(c: float) -> float:
                edge = c * math.sqrt(t)
                tail = norm.sf((edge - grid) / sd) + norm.cdf((-edge - grid) / sd)
                return float(np.sum(weights * dens * tail))

            c = _MAX_Z if budget <= 1e-15 or crossed(_MAX_Z) >= budget else \
                float(brentq(lambda c: crossed(c) - budget, 1e-6, _MAX_Z, xtol=1e-10))
        out.append(c)
        edge = min(c, 12.0) * math.sqrt(t)  # beyond 12 SD the density is nil
        new = np.linspace(-edge, edge, GRID)
        w = np.full(GRID, 2.0)
        w[1::2] = 4.0
        w[0] = w[-1] = 1.0
        w *= (new[1] - new[0]) / 3.0
        if grid is None:
            dens = norm.pdf(new / math.sqrt(t)) / math.sqrt(t)
        else:
            sd = math.sqrt(t - prev_t)
            dens = (weights * dens) @ (norm.pdf((new[None, :] - grid[:, None]) / sd) / sd)
        grid, weights, prev_t = new, w, t
    return out


def nominal_level(c: float) -> float:
    """The two-sided confidence level of an interval at boundary |Z| = c: 1 - 2 (1 - Phi(c))."""
    return 1.0 - math.erfc(c / math.sqrt(2.0))


@dataclass(frozen=True)
class Look:
    """One look of a sequential design: its runs, information fraction, boundary and level."""

    runs: int
    fraction: float
    boundary: float
    level: float

    def as_dict(self) -> dict:
        return {"runs": self.runs, "fraction": self.fraction, "boundary": self.boundary,
                "level": self.level}

    @classmethod
    def from_dict(cls, d: dict) -> "Look":
        return cls(int(d["runs"]), float(d["fraction"]), float(d["boundary"]), float(d["level"]))


def schedule(first: int, budget: int, growth: float = 1.5) -> list[int]:
    """The runs at each look: ``first``, then growing by ``growth`` (rounded up) to ``budget``;
    the last look is the budget itself."""
    if budget < 1 or first < 1:
        raise ValueError("a sequential design needs at least one run at its first look and budget")
    runs = [min(first, budget)]
    while runs[-1] < budget:
        runs.append(min(budget, max(runs[-1] + 1, math.ceil(runs[-1] * growth))))
    return runs


def information(runs: int, fixed: int | None = None) -> float:
    """The information of a comparison at ``runs`` runs (module docstring): ``runs`` where both
    sides grow alike (a constant factor cancels in a fraction); 1 / (1/runs + 1/fixed) against a
    side fixed at ``fixed`` runs."""
    if runs < 1 or (fixed is not None and fixed < 1):
        raise ValueError("information needs at least one run a side")
    return float(runs) if fixed is None else 1.0 / (1.0 / runs + 1.0 / fixed)


def fraction(runs: int, budget: int, fixed: int | None = None) -> float:
    """The information fraction I(runs) / I(budget), at most 1."""
    return min(1.0, information(runs, fixed) / information(budget, fixed))


def looks(runs: Sequence[int], budget: int, alpha: float = 0.05, kind: str = "obf",
          fixed: int | None = None) -> list[Look]:
    """The design's looks at ``runs`` (increasing) out of ``budget`` runs: information fraction
    (runs/budget, or against a side ``fixed`` at m runs I(n)/I(budget)), the last one taken as 1
    (it spends what is left), boundary and nominal level of each."""
    fractions = [fraction(n, budget, fixed) for n in runs]
    fractions[-1] = 1.0
    cs = boundaries(fractions, alpha, kind)
    return [Look(n, t, c, nominal_level(c)) for n, t, c in zip(runs, fractions, cs)]


@lru_cache(maxsize=64)
def planned(first: int, budget: int, alpha: float = 0.05, kind: str = "obf",
            fixed: int | None = None) -> tuple[Look, ...]:
    """The looks a budget plans (``schedule(first, budget)``), the last at fraction 1. A look's
    boundary depends only on the looks up to it, so any prefix is the design of a study that
    stopped there; cached, as a study asks at every look."""
    return tuple(looks(schedule(first, budget), budget, alpha, kind, fixed))


def design_at(first: int, budget: int, rounds: int, alpha: float = 0.05, final: bool = False,
              kind: str = "obf", fixed: int | None = None) -> list[Look]:
    """The looks of a study that has run ``rounds`` of a ``budget``: the planned looks before it
    and the look at ``rounds``. ``final`` (the budget ended, or a time limit cut it short): that
    look spends what is left (fraction 1); else, off the plan, its own share (``fraction``)."""
    plan = planned(first, budget, alpha, kind, fixed)
    before = [lk for lk in plan if lk.runs < rounds]
    if not final or rounds == budget:
        at = [lk for lk in plan if lk.runs == rounds]
        if at:
            return before + at
    runs = [lk.runs for lk in before] + [rounds]
    fractions = [lk.fraction for lk in before] + [1.0 if final else fraction(rounds, budget, fixed)]
    cs = boundaries(fractions, alpha, kind)
    return [Look(n, t, c, nominal_level(c)) for n, t, c in zip(runs, fractions, cs)]


def decide(ratio: float, low: float, high: float, min_effect: float) -> str | None:
    """'larger', 'smaller' (the interval excludes 1 and the ratio is at least 1 + min_effect away),
    'within' (the interval lies inside [1/(1 + min_effect), 1 + min_effect]) or None (undecided).
    ``within`` comes first: an interval inside the margin that also excludes 1 shows a change
    smaller than the minimum effect, which is what "no change of m or more" says."""
    if not all(math.isfinite(v) and v > 0 for v in (ratio, low, high)):
        return None
    if low >= 1.0 / (1.0 + min_effect) and high <= 1.0 + min_effect:
        return "within"
    if low > 1.0 and ratio >= 1.0 + min_effect:
        return "larger"
    if high < 1.0 and ratio <= 1.0 / (1.0 + min_effect):
        return "smaller"
    return None


def runs_needed(runs: int, ratio: float, low: float, high: float, min_effect: float) -> int:
    """About how many runs (per side) would decide a comparison that ``runs`` left undecided: each
    side of the log interval shrinks as 1/sqrt(n). A change is shown once the side towards 1 is
    shorter than the log ratio's distance from 0; one is ruled out once the longer side is shorter
    than its distance from the margin log(1 + m) (a ratio near the margin asks for half the
    margin); the cheaper of the two. The interval is the one at this look's level and the last
    look's is about as wide, so this is an estimate, not a promise."""
    if runs < 1 or not all(math.isfinite(v) and v > 0 for v in (ratio, low, high)) or high <= low:
        return max(2 * runs, 1)
    d, margin = math.log(ratio), math.log1p(min_effect)
    below, above = d - math.log(low), math.log(high) - d
    toward_one = below if d > 0 else above
    shown = runs * (toward_one / abs(d)) ** 2 if d != 0 else math.inf
    ruled_out = runs * (max(below, above) / max(margin - abs(d), margin / 2.0)) ** 2
    return max(runs + 1, math.ceil(round(min(shown, ruled_out), 6)))  # float dust is no run
