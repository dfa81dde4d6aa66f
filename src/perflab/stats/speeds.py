"""Compare like with like: A against B within each speed when the pooled runs have two.

A machine at two speeds (a vCPU sharing its host core, frequency steps) gives each side a mixture
whose median moves with the share of runs that fell at each speed, and that share changes from
campaign to campaign: more runs do not remove it. ``within_speeds(a, b)`` removes it:

1. The speeds are found in the pooled runs of both sides (stats.modes: a two-Gaussian mixture on
   log values against one speed, and against one speed with a tail, by BIC), with B first moved
   onto A by the current estimate of the change (a whole-sample Hodges-Lehmann ratio, then the
   stratified one), so that a change between the sides is not taken for two speeds and a mode is
   cut at the same place on both sides. Two passes. Where the pooled runs show one speed but each
   side alone shows two (a change between the sides about half the gap fills the valley: four
   levels), the sides' speeds are matched in order and B is moved by their stratified ratio first.
2. Each run is assigned its speed; the comparison is van Elteren's stratified rank-sum test with
   the speeds as strata (stats.stratified.van_elteren: the Wilcoxon statistics of the strata,
   each weighted 1/(n_k + 1)), and the effect is the stratified Hodges-Lehmann ratio B/A with the
   interval that inverts that statistic at its achieved level (stats.stratified.stratified_ratio_ci).
   One speed: Moses' interval and the Mann-Whitney test, as before.
3. A speed one side never reached is left out and named; one where a side has fewer than
   ``MIN_IN_SPEED`` runs is kept (it adds little) and named with the runs that would give it that
   many at its share. Where one side runs at one speed, the other at two, and the change against
   the shared speed is over a third of the gap between the speeds, a change cannot be told from a
   change of speed: ``undecided`` says so and the comparison is not made; so too where the
   two-speed side reached the one-speed side's speed fewer than ``MIN_IN_SPEED`` times (a few
   runs a loaded machine slowed can make such a 'speed') and the change against its other speed
   is over a third of the gap.

``line()`` says which was done: "compared within two speeds: 31 % and 69 % of runs".
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Sequence

from perflab.stats.modes import Modes, detect_modes
from perflab.stats.outliers import mad_outliers
from perflab.stats.shift import ratio_ci
from perflab.stats.stratified import stratified_ratio_ci, van_elteren

METHOD_TWO = ("within two speeds (stats.modes on the pooled runs, B aligned on A): van Elteren's "
              "stratified rank-sum test, stratified Hodges-Lehmann ratio")
METHOD_ONE = "one speed: Mann-Whitney test, Hodges-Lehmann ratio with Moses' interval"
MIN_IN_SPEED = 3  # fewer runs of a side at a speed and that speed adds little to the comparison
MODES_MIN_N = 10  # stats.modes reports one mode below this many runs (pooled)
# A refit moves a speed's cut by less than this log shift's worth: not worth a second mixture fit
# (a fit is ~10-30 ms, and `perflab compare` makes one per point and measure)
REFIT = 0.01
NAMES = ("fast", "slow")  # by the log values of a cost (a time): the lower is the fast speed


def speed_names(higher_is_better: bool | None) -> tuple[str, str]:
    """The names of the lower and the upper speed by the measure's direction: for a rate the
    higher values are the fast speed; where no direction is declared, 'lower' and 'upper'."""
    if higher_is_better is None:
        return ("lower", "upper")
    return ("slow", "fast") if higher_is_better else NAMES


@dataclass(frozen=True)
class Speed:
    """One speed's runs of each side; ``share`` of all runs, ``center`` A's and B's median there."""

    name: str
    a: tuple[float, ...]
    b: tuple[float, ...]
    share: float
    center: float  # median of the speed's runs in A's terms (B's moved by the estimated change)

    @property
    def usable(self) -> bool:
        return bool(self.a) and bool(self.b)

    def as_dict(self) -> dict:
        return {"name": self.name, "n_a": len(self.a), "n_b": len(self.b), "share": self.share,
                "center": self.center}


@dataclass(frozen=True)
class WithinSpeeds:
    """B against A, within each speed where there are two: ratio B/A, interval, p, what it rests on."""

    speeds: tuple[Speed, ...]  # one (the whole sample) or two
    ratio: float
    low: float
    high: float
    level: float  # the interval's achieved level
    p: float  # two-sided
    notes: tuple[str, ...] = ()  # a speed left out or thin, and what it would take
    z: float = math.nan  # van Elteren's Z of B above A (two speeds; nan at one)
    undecided: str = ""  # why no comparison can be made ('' when it was)
    modes: Modes | None = field(default=None, repr=False, compare=False)
    labels: tuple[tuple[int, ...], tuple[int, ...]] = field(default=((), ()), repr=False, compare=False)
    # each run's speed (0 fast, 1 slow), A's and B's, in input order; empty at one speed

    @property
    def two(self) -> bool:
        return len(self.speeds) > 1

    @property
    def method(self) -> str:
        return METHOD_TWO if self.two else METHOD_ONE

    @property
    def strata(self) -> list[tuple[tuple[float, ...], tuple[float, ...]]]:
        return [(s.a, s.b) for s in self.speeds if s.usable]

    def line(self) -> str:
        """'compared within two speeds: 31 % and 69 % of runs' ('' at one speed)."""
        if not self.two:
            return ""
        used = [s for s in self.speeds if s.usable]
        if len(used) == 1:
            return (f"compared within the {used[0].name} speed only ({used[0].share:.0%} of runs): "
                    "the other speed holds runs of one side only")
        return ("compared within two speeds: "
                + " and ".join(f"{s.share:.0%}" for s in self.speeds) + " of runs")

    def greater_p(self) -> float:
        """One-sided p of "B tends to be larger than A" from van Elteren's Z (two speeds only)."""
        return 0.5 * math.erfc(self.z / math.sqrt(2)) if not math.isnan(self.z) else math.nan

    def as_dict(self) -> dict:
        return {"speeds": [s.as_dict() for s in self.speeds], "ratio": self.ratio, "low": self.low,
                "high": self.high, "level": self.level, "p": self.p, "notes": list(self.notes),
                "undecided": self.undecided, "method": self.method, "line": self.line()}


def worth_looking(values: Sequence[float], cv: float = 0.05) -> bool:
    """Whether a sample could hide two speeds worth a mixture fit: 5 or more positive values with
    a coefficient of variation above ``cv`` or a modified Z-score outlier (Iglewicz & Hoaglin);
    a quiet sample cannot, and skipping it keeps numpy and scipy unloaded."""
    if len(values) < 5 or not all(0 < v < math.inf for v in values):
        return False
    return statistics.stdev(values) / statistics.fmean(values) > cv or bool(mad_outliers(values))


def _hl(a: Sequence[float], b: Sequence[float]) -> float:
    """Hodges-Lehmann log shift of B against A (median of the pairwise log ratios)."""
    import numpy as np

    d = np.log(np.asarray(b, float))[None, :] - np.log(np.asarray(a, float))[:, None]
    return float(np.median(d))


def _stratified_shift(a, b, la, lb) -> float:
    """The stratified Hodges-Lehmann log shift over the speeds both sides reached."""
    strata = [([x for x, k in zip(a, la) if k == s], [x for x, k in zip(b, lb) if k == s]) for s in (0, 1)]
    strata = [(x, y) for x, y in strata if x and y]
    if not strata:
        return _hl(a, b)
    return math.log(stratified_ratio_ci(strata, level=0.5)[0])


def assign(a: Sequence[float], b: Sequence[float]) -> tuple[Modes | None, list[int], list[int], float]:
    """(the pooled fit, each run of A's speed, each run of B's speed, the log shift B was moved by):
    0 fast, 1 slow; the fit is None and every label 0 where the pooled runs have one speed.

    First the runs as they are: where a side ran at one speed it is compared with the other side's
    runs at the speed it matches (the smaller change, as stats.judge.align did). Where the two
    'speeds' are the two sides (no speed holds two runs of each), that is a change, and the speeds are
    looked for again with B moved onto A by its whole-sample Hodges-Lehmann ratio. Then once more
    with B moved by the stratified ratio, so that a speed is cut at the same place on both sides."""
    n = len(a) + len(b)
    none = None, [0] * len(a), [0] * len(b), 0.0
    if n < MODES_MIN_N or len(a) < 2 or len(b) < 2:
        return none

    def fit_at(shift: float):
        fit = detect_modes(list(a) + [x * math.exp(-shift) for x in b])
        return fit, list(fit.labels[:len(a)]), list(fit.labels[len(a):])

    shift = 0.0
    fit, la, lb = fit_at(shift)
    if fit.multimodal and not _shared(la, lb):
        shift = _hl(a, b)
        fit, la, lb = fit_at(shift)
    if not fit.multimodal:
        return _one_side(a, b) or _each_side(a, b, fit_at) or none
    refined = _stratified_shift(a, b, la, lb)
    if abs(refined - shift) < REFIT:
        return fit, la, lb, shift
    again = fit_at(refined)
    # The refit is kept only where every side keeps each speed it had: a refit that empties a
    # side's speed has followed a stray first estimate (a loaded machine's tail), not the speeds.
    if again[0].multimodal and all(set(new) >= set(old) for new, old in ((again[1], la), (again[2], lb))):
        (fit, la, lb), shift = again, refined
    return fit, la, lb, shift


def _one_side(a: Sequence[float], b: Sequence[float]):
    """Where the pooled runs show one speed but one side alone shows two (the other side's runs
    filling the valley between them, or a loaded machine's tail blurring it): that side's speeds.
    The other side, where its runs spread no wider than twice the spread within a speed, ran at one
    speed and goes wholly to the speed its median is nearer (stats.judge.align's rule; _confounded
    then says whether that speed is near enough); a side spread wider spans the speeds, and each of
    its runs goes to the speed it is nearer (the cut half-way between their medians, log scale).
    None where neither side alone shows two."""
    fits = [detect_modes(x) if len(x) >= MODES_MIN_N else None for x in (a, b)]
    two = [f is not None and f.multimodal for f in fits]
    if two[0] == two[1]:
        return None
    k = 0 if two[0] else 1
    fit, mixed, other = fits[k], (a, b)[k], (b, a)[k]
    assert fit is not None  # two[k] holds only for a fit
    within = _spread(*[[x for x, lab in zip(mixed, fit.labels) if lab == m] for m in (0, 1)])
    lo, hi = fit.modes[0].center, fit.modes[1].center
    if _spread(other) <= 2 * within:
        centre = math.log(_median(other))
        near = min((0, 1), key=lambda i: abs(centre - math.log((lo, hi)[i])))
        rest = [near] * len(other)
    else:
        cut = math.sqrt(lo * hi)
        rest = [int(x > cut) for x in other]
    own = list(fit.labels)
    return (fit, own, rest, 0.0) if k == 0 else (fit, rest, own, 0.0)


def _each_side(a: Sequence[float], b: Sequence[float], fit_at):
    """Where the pooled runs show one speed but each side alone shows two: the change between the
    sides fills the gap between the speeds (two speeds 1.48x apart times a 1.2x change are four
    levels about equally spaced, which one mixture does not split: 43 of 60 such pairs of 20
    runs). Each side's speeds are matched in order (lower with lower), B is moved onto A by the
    stratified ratio of those, and the speeds are looked for again in the pooled runs, so that a
    speed is cut at the same place on both sides; kept only where that fit finds two speeds and
    each side keeps both. None otherwise (one speed, as before)."""
    if min(len(a), len(b)) < MODES_MIN_N:
        return None
    fa, fb = detect_modes(a), detect_modes(b)
    if not (fa.multimodal and fb.multimodal):
        return None
    shift = _stratified_shift(a, b, fa.labels, fb.labels)
    fit, la, lb = fit_at(shift)
    if not fit.multimodal or not all(set(x) == {0, 1} for x in (la, lb)):
        return None
    return fit, la, lb, shift


def _spread(*samples: Sequence[float]) -> float:
    """Pooled SD of the log values about each sample's median: 1.4826 x MAD (as stats.judge)."""
    dev = sorted(abs(math.log(x) - math.log(_median(s))) for s in samples if s for x in s)
    return 1.4826 * _median(dev) if dev else 0.0


def _shared(la: Sequence[int], lb: Sequence[int]) -> bool:
    """Whether some speed holds runs of both sides, two at least of each (what a test within it
    needs): one stray run of a side at the other's level (a recorded loaded campaign's 53 ms among
    its 85 ms) does not make the two sides two speeds."""
    return any(la.count(m) >= 2 and lb.count(m) >= 2 for m in set(la) & set(lb))


def same_speed(a: Sequence[float], b: Sequence[float]) -> tuple[list[bool], Modes | None]:
    """For pairs (a_i, b_i) taken together (one round): whether each pair's two runs fell at the
    same speed, and the fit of A's runs (None where a side shows one speed: every pair kept). A
    paired test on the kept pairs compares like with like and keeps what pairing removes (drift
    between rounds); a pair across the speeds holds the gap between them, not the change.

    Each side's runs are cut at that side's own speeds (stats.modes on A alone and on B alone,
    MODES_MIN_N runs each at least): the two sides of a round meet the same machine, so its speed
    shows in both, each at its own level. Speeds of the pooled runs with B moved onto A by an
    estimated ratio (assign) mislabelled rounds wherever that estimate missed: base 0.100 s
    against a -ffast-math build at 0.028 s under load kept 8 of 18 rounds and read -19 %."""
    if min(len(a), len(b)) < MODES_MIN_N:
        return [True] * len(a), None
    fa, fb = detect_modes(a), detect_modes(b)
    if not (fa.multimodal and fb.multimodal):
        return [True] * len(a), None
    return [x == y for x, y in zip(fa.labels, fb.labels)], fa


def paired_line(kept: Sequence[bool]) -> str:
    """'paired within speeds: 23 of 30 rounds had both runs at one speed' ('' when all were)."""
    if all(kept):
        return ""
    return (f"paired within speeds: {sum(kept)} of {len(kept)} rounds had both runs at one speed "
            "(the others are left out: they hold the gap between the speeds)")


def _mann_whitney_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided Mann-Whitney p (scipy, as stats.comparison.mann_whitney; 1 where all tie)."""
    from scipy.stats import mannwhitneyu

    p = float(mannwhitneyu(b, a, alternative="two-sided").pvalue)
    return 1.0 if math.isnan(p) else p


def _median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    m = len(s) // 2
    return s[m] if len(s) % 2 else (s[m - 1] + s[m]) / 2


def within_speeds(a: Sequence[float], b: Sequence[float], level: float = 0.95, look: bool = True,
                  with_p: bool = True, higher_is_better: bool | None = False) -> WithinSpeeds:
    """B against A, within each speed where the pooled runs have two (module docstring).
    ``look=False``: the caller knows there is one speed (numpy stays unloaded for few runs);
    ``with_p=False``: p is nan at one speed (scipy stays unloaded); ``higher_is_better`` names
    the speeds (speed_names)."""
    a, b = tuple(float(x) for x in a), tuple(float(x) for x in b)
    if not a or not b or not all(0 < x < math.inf for x in (*a, *b)):
        raise ValueError("within_speeds needs positive, finite values on both sides")
    fit, la, lb, shift = assign(a, b) if look else (None, [], [], 0.0)
    if fit is None:
        ratio, ci = ratio_ci(b, a, level=level)
        p = math.nan
        if with_p:
            p = _mann_whitney_p(a, b)
        whole = Speed("one", a, b, 1.0, _median(a + b))
        return WithinSpeeds((whole,), ratio, ci.low, ci.high, ci.level, p, modes=None)
    n = len(a) + len(b)
    speeds = []
    for k, name in enumerate(speed_names(higher_is_better)):
        xa = tuple(x for x, lab in zip(a, la) if lab == k)
        xb = tuple(x for x, lab in zip(b, lb) if lab == k)
        aligned = xa + tuple(x * math.exp(-shift) for x in xb)  # in A's terms
        speeds.append(Speed(name, xa, xb, (len(xa) + len(xb)) / n, _median(aligned) if aligned else math.nan))
    notes = _notes(speeds, n)
    used = [(s.a, s.b) for s in speeds if s.usable]
    if not used:  # each side at its own speed: assign() would have aligned them into one
        return WithinSpeeds(tuple(speeds), math.nan, math.nan, math.nan, 0.0, 1.0, tuple(notes), math.nan,
                            "A and B ran at different speeds throughout: a change cannot be told "
                            "from a change of speed; interleave their runs", fit, (tuple(la), tuple(lb)))
    ratio, lo, hi, achieved = stratified_ratio_ci(used, level=level)
    z, p = van_elteren(used)
    undecided = _confounded(speeds, ratio)
    return WithinSpeeds(tuple(speeds), ratio, lo, hi, achieved, p, tuple(notes), z, undecided, fit,
                        (tuple(la), tuple(lb)))


def _notes(speeds: list[Speed], n: int) -> list[str]:
    """A speed a side never reached, or reached fewer than MIN_IN_SPEED times, and what it takes."""
    out = []
    for s in speeds:
        for side, xs in (("A", s.a), ("B", s.b)):
            if len(xs) >= MIN_IN_SPEED:
                continue
            need = math.ceil(MIN_IN_SPEED / max(s.share, 1e-9))
            what = "never ran" if not xs else f"ran {len(xs)} time{'s' * (len(xs) != 1)}"
            out.append(f"{side} {what} at the {s.name} speed ({s.share:.0%} of all runs): "
                       + ("that speed is left out" if not s.usable else "it adds little")
                       + f"; about {need} runs a side would give each speed {MIN_IN_SPEED}"
                       " at this share (interleave the sides so both meet both speeds)")
    return out


def _confounded(speeds: list[Speed], ratio: float) -> str:
    """Why a change cannot be told from a change of speed ('' when it can): one side at one speed,
    the other at both, and the change against the shared speed over a third of the gap."""
    if all(s.usable for s in speeds) or not math.isfinite(ratio):
        return ""
    fast, slow = speeds
    both = [(f, sl) for f, sl in ((fast.a, slow.a), (fast.b, slow.b)) if f and sl]
    if not both:
        return ""
    gap = abs(math.log(_median(both[0][1]) / _median(both[0][0])))
    # The speed the one-speed side was matched to, and the other side's runs there: where they
    # are fewer than MIN_IN_SPEED, that 'speed' may be a few runs a loaded machine slowed (2 of a
    # baseline's 15 `sleep 0.02` at 31 ms under a load of 12, against `sleep 0.03`), and the
    # whole change, measured against the speed where the two-speed side mostly ran, is in doubt.
    shared = next(s for s in speeds if s.usable)
    other = next(s for s in speeds if not s.usable)
    x_is_b = not other.b  # the one-speed side: no runs at the other speed
    thin = len(shared.a) if x_is_b else len(shared.b)  # the two-speed side's runs where X ran
    # B/A against the two-speed side's other speed: what the change would be were X there
    alt = (_median(shared.b) / _median(other.a)) if x_is_b else (_median(other.b) / _median(shared.a))
    if thin < MIN_IN_SPEED and abs(math.log(alt)) > gap / 3:
        one, two = ("B", "A") if x_is_b else ("A", "B")
        return (f"{one} ran wholly at the {shared.name} speed, which {two} reached only {thin} "
                f"time{'s' * (thin != 1)}: a change of {alt:.3g}x against {two}'s {other.name} "
                "speed cannot be told from a change of speed; rerun both with their runs interleaved")
    if abs(math.log(ratio)) <= gap / 3:
        return ""
    return (f"one side ran at one speed, {ratio:.3g}x the other's nearer speed, which ran at two "
            f"{math.exp(gap):.2f}x apart: a change cannot be told from a change of speed; "
            "rerun both with their runs interleaved")
