"""Compare two campaigns of one study kind (two machines, dates or builds) measure by measure.

Measurements are matched on the study's design keys (studies/compare_keys.py); for each
matched point and each measure (wall time, max RSS, user time, energy per run and per event
where both campaigns measured it, every metric) B/A is the Hodges-Lehmann ratio (the median of
the pairwise ratios b/a) with Moses' interval at the level it really has (stats.shift.ratio_ci:
67 % at 2 runs a side, 90 % at 3, the asked 1 - alpha from 4 or 5), and a two-sided
Mann-Whitney p, Holm-corrected over all the comparisons made. Across several points, one more
row per measure: van Elteren's stratified test with the interval that inverts it
(stats.stratified). A comparison is significant when its adjusted p is below alpha and its
interval lies wholly outside the band of +-min_effect around 1 (default 1 %): a smaller change
is never called a difference. One campaign a side cannot tell a change from drift between
campaigns (another day, another load); the verdict says so. A side with two speeds
(stats.modes) is named with its modes, and the verdict says what its median rests on.

Counted measures (--instrument cachegrind) are judged as the gate judges them
(studies/compare_counted.py); equal constant counts are shown, untested. A simulated campaign
without a primary metric is headed by instructions (its wall time is Valgrind's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

from perflab import stats
from perflab.errors import PerflabError
from perflab.measure import cachegrind
from perflab.stats import median
from perflab.stats.modes import detect_modes
from perflab.stats.shift import ratio_ci
from perflab.stats.stratified import pooled_ratio, stratified_ratio_ci, van_elteren
from perflab.studies import compare_counted
from perflab.studies.compare_keys import directed, higher_is_better, measure_title, primary_metric, series

# Below this many runs per side the percentile bootstrap interval covers less than it says
# (52 % at n=2, 74 % at n=3 for a nominal 95 %), and Mann-Whitney cannot reject at 0.05.
MIN_N_FOR_CI = 5
# Smaller changes are never called significant by `perflab compare`: below 1 % a difference
# between two campaigns is as likely the machine's (drift, another day) as the code's.
DEFAULT_MIN_EFFECT = 0.01
# Fewer runs a side and stats.modes cannot see two speeds (its own minimum).
MIN_N_FOR_MODES = 10
DRIFT = "one campaign a side: a difference may be drift between campaigns; replicate"


@dataclass(frozen=True)
class CompareConfig:
    a: int
    b: int
    alpha: float = 0.05
    seed: int = 0
    min_effect: float = DEFAULT_MIN_EFFECT
    counted_min_effect: float = 0.0  # the band for counted measures (module docstring)
    metric: str | None = None  # the primary metric given on the command line, over B's recorded one
    higher_is_better: bool | None = None


@dataclass
class CompareRow:
    """One measure of one design point: A's and B's medians, B/A with its CI, the test."""

    key: str
    measure: str
    n_a: int
    n_b: int
    median_a: float
    median_b: float
    ratio: float
    lo: float
    hi: float
    p_value: float
    p_adjusted: float = 1.0
    significant: bool = False
    better: str = ""  # "A", "B" or "" (not significant, or no declared direction)
    level: float = 0.95  # confidence level of [lo, hi], the one it really has
    overall: bool = False  # across every matched point (van Elteren), not one point
    alpha_used: float = 0.05  # what p_adjusted was held against (alpha/2 in two families)
    min_effect: float = 0.0  # the CI must lie outside [1 - min_effect, 1 + min_effect]
    direction: bool | None = None  # higher is better (None: the campaign declares none)
    modes_a: Any = None  # stats.modes.Modes where A has two speeds
    modes_b: Any = None
    counted: bool = False  # judged as a count (gate_judge.counted_test), not by ranks

    @property
    def untested(self) -> bool:
        """Equal constant counts on both sides: known to be the same, no test made."""
        return self.counted and self.lo == self.hi == 1.0

    @property
    def ci_text(self) -> str:
        """'[0.9920, 1.0266] 67%', or 'exact' where both sides are constant counts."""
        return f"[{self.lo:.4f}, {self.hi:.4f}] " + ("exact" if self.level == 1.0 else f"{100 * self.level:.0f}%")

    @property
    def change(self) -> float:
        """Relative change B/A - 1."""
        return self.ratio - 1.0

    @property
    def bimodal(self) -> bool:
        return self.modes_a is not None or self.modes_b is not None

    @property
    def verdict_cell(self) -> str:
        """'A better', 'B better', 'B higher' (no declared direction), 'same'; '2 speeds' added."""
        if self.untested:
            text = "same (equal counts)"
        elif not self.significant:
            text = "same"
        elif self.better:
            text = f"{self.better} better"
        else:
            text = "B higher" if self.ratio > 1 else "B lower"
        return text + (", 2 speeds" if self.bimodal else "")

    def modes_text(self) -> str:
        """'A: 2 modes: 0.05 (60% of runs), 0.08 (40%); B: one speed' where a side has two."""
        def side(m: Any) -> str:
            return m.line() if m is not None else "one speed"
        return f"A: {side(self.modes_a)}; B: {side(self.modes_b)}"

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "measure": self.measure, "measure_title": measure_title(self.measure),
                "n_a": self.n_a, "n_b": self.n_b, "median_a": self.median_a,
                "median_b": self.median_b, "ratio": self.ratio,
                "ci": {"low": self.lo, "high": self.hi, "level": self.level},
                "p_value": self.p_value, "p_adjusted": self.p_adjusted, "alpha_used": self.alpha_used,
                "min_effect": self.min_effect, "significant": self.significant, "better": self.better,
                "counted": self.counted, "tested": not self.untested,
                "higher_is_better": self.direction, "verdict": self.verdict_cell, "overall": self.overall,
                "modes_a": self.modes_a.as_dict() if self.modes_a is not None else None,
                "modes_b": self.modes_b.as_dict() if self.modes_b is not None else None}


@dataclass
class CompareResult:
    a: int
    b: int
    study_a: str
    study_b: str
    alpha: float = 0.05
    rows: list[CompareRow] = field(default_factory=list)
    unmatched_a: list[str] = field(default_factory=list)
    unmatched_b: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    min_effect: float = 0.0
    primary: str = "wall_s"  # the measure the headline is about: the primary metric, or wall time
    counted_min_effect: float = 0.0  # the band of counted rows (CompareConfig)

    @property
    def headline(self) -> CompareRow | None:
        """The largest significant change in the primary measure (None when there is none)."""
        sig = [r for r in self.rows if r.significant and r.measure == self.primary]
        return max(sig, key=lambda r: abs(math.log(r.ratio)), default=None)

    @property
    def verdict(self) -> str:
        if not self.rows:
            return f"campaigns {self.a} and {self.b} share no measurement to compare."
        sig = [r for r in self.rows if r.significant]
        band = f" by more than {100 * self.min_effect:g} %" if self.min_effect else ""
        if any(r.counted for r in sig) and self.counted_min_effect != self.min_effect:
            counts = (f"by more than {100 * self.counted_min_effect:g} %" if self.counted_min_effect
                      else "by any amount")
            band = f" (counts {counts}{', times' + band if band else ''})"
        what = measure_title(self.primary)
        top = self.headline
        if top is not None:
            text = (f"{what} of {top.key} is {100 * top.change:+.1f} % in B (campaign {self.b}): "
                    f"{_judgement(top)}, {compare_counted.ci_words(top.ratio, top.lo, top.hi, top.level)}; "
                    f"{len(sig)} of {len(self.rows)} comparisons differ{band}.")
        elif sig:
            other = max(sig, key=lambda r: abs(math.log(r.ratio)))
            text = (f"no significant change in {what}{band}; {len(sig)} of {len(self.rows)} other "
                    f"comparisons differ, largest: {measure_title(other.measure)} of {other.key} "
                    f"{100 * other.change:+.1f} % in B ({_judgement(other)}).")
        else:
            text = (f"no significant difference{band} between campaign {self.a} and {self.b} "
                    f"in {len(self.rows)} comparisons (Holm, alpha {self.alpha:g}); this does not "
                    "show they are equal, only that these runs cannot tell them apart.")
        two = top if top is not None and top.bimodal else next(
            (r for r in self.rows if r.measure == self.primary and r.bimodal), None)
        if two is not None:
            text += (f" {what} of {two.key} has two speeds ({two.modes_text()}): its median "
                     f"moves with the share of runs at each speed{_per_mode(two)}, so B/A rests on "
                     "which speed the runs hit as much as on the code.")
        if sig:
            text += f" Caution: {DRIFT}."
        return text

    def as_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "study_a": self.study_a, "study_b": self.study_b,
                "alpha": self.alpha, "min_effect": self.min_effect, "primary": self.primary,
                "counted_min_effect": self.counted_min_effect,
                "verdict": self.verdict, "rows": [r.as_dict() for r in self.rows],
                "unmatched_a": self.unmatched_a, "unmatched_b": self.unmatched_b, "notes": self.notes}


def _judgement(r: CompareRow) -> str:
    if r.better:
        return f"{r.better} better"
    return "no declared direction for it (primary_metric and higher_is_better in perflab.toml)"


def _per_mode(r: CompareRow) -> str:
    """', fast speed B/A 1.02, slow speed B/A 0.99' where both sides have the same two speeds."""
    ma, mb = r.modes_a, r.modes_b
    if ma is None or mb is None:
        return ""
    fast, slow = mb.modes[0].center / ma.modes[0].center, mb.modes[1].center / ma.modes[1].center
    return (f"; speed by speed B/A is {fast:.3g} (lower mode) and {slow:.3g} (upper mode), "
            f"the upper mode holds {ma.modes[1].share:.0%} of A's runs and {mb.modes[1].share:.0%} of B's")


def compare_measurements(
    study: str, meas_a: Sequence[Any], meas_b: Sequence[Any], alpha: float = 0.05, seed: int = 0,
    config: dict | None = None, measures: Sequence[str] | None = None, *,
    min_effect: float = 0.0, interval: str = "bootstrap", modes: bool = False,
    counted_min_effect: float = 0.0,
) -> tuple[list[CompareRow], list[str], list[str], list[str]]:
    """Rows for every matched point and measure (only ``measures`` when given), Holm-corrected.

    ``interval``: "rank" for Moses' interval at its real level (what `perflab compare` prints),
    "bootstrap" for the percentile bootstrap of the ratio of medians. ``min_effect``: the band
    around 1 that a significant CI must exclude; ``counted_min_effect`` the band of counted rows.
    ``modes``: name two speeds (stats.modes) of wall time and the primary metric.
    Returns (rows, keys only in A, keys only in B, notes).
    """

    sa, ta = series(study, meas_a)
    sb, tb = series(study, meas_b)
    rows: list[CompareRow] = []
    notes: list[str] = []
    if study == "run" and len(sa) == len(sb) == 1 and set(sa) != set(sb):
        # One command on each side (a CI job timing its build; paths differ per commit):
        # the two are the point to compare, whatever their command lines say.
        (ka, kb), = zip(sa, sb)
        notes.append(f"matched the only command of each campaign: '{ta[ka]}' (A) with '{tb[kb]}' (B)")
        sb, ta, tb = {ka: sb[kb]}, {ka: tb[kb]}, {ka: tb[kb]}
    small = 0
    zero: dict[str, list[str]] = {}
    rank = interval == "rank"
    for key in sorted(set(sa) & set(sb), key=lambda k: ta[k]):
        wanted = sorted(set(sa[key]) & set(sb[key]), key=_measure_order)
        if measures is not None:
            wanted = [m for m in measures if m in wanted]
        for measure in wanted:
            a, b = sa[key][measure], sb[key][measure]
            if len(a) < 2 or len(b) < 2:
                continue
            counted = compare_counted.is_counted(measure, a, b)
            if len(set(a) | set(b)) == 1 and not counted:
                continue  # the same constant on both sides (event counts): nothing to test
            if stats.median(a) == 0 or (rank and min(min(a), min(b)) <= 0):
                # No ratio to a zero (user time of `sleep`, a metric that is 0): said, not crashed.
                zero.setdefault(measure, []).append(ta[key])
                continue
            if counted:
                p, ratio, lo, hi, level = compare_counted.test(a, b, alpha)
                rows.append(CompareRow(ta[key], measure, len(a), len(b), stats.median(a), stats.median(b),
                                       ratio, lo, hi, p, level=level, counted=True))
                continue
            small += min(len(a), len(b)) < MIN_N_FOR_CI
            if rank:
                ratio, ci = ratio_ci(b, a, level=1 - alpha)
                _, p = stats.mann_whitney(b, a)
                row = CompareRow(ta[key], measure, len(a), len(b), stats.median(a), stats.median(b),
                                 ratio, ci.low, ci.high, p, level=ci.level)
            else:
                c = stats.compare(b, a, alpha=alpha, confidence=1 - alpha, seed=seed)
                row = CompareRow(ta[key], measure, len(a), len(b), stats.median(a),
                                 stats.median(b), c.ratio, c.lo, c.hi, c.p_value, level=1 - alpha)
            if modes and (measure == "wall_s" or higher_is_better(measure, config) is not None
                          and measure.startswith("metric:")):
                # The measures a verdict rests on (wall time, the primary metric); a mixture fit
                # of every measure would cost more than the comparison itself.
                row.modes_a, row.modes_b = _two_speeds(a), _two_speeds(b)
            rows.append(row)
    for measure, keys in zero.items():
        where = ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
        notes.append(f"{measure_title(measure)} left out at {where}: a run or median of 0 on a side "
                     "has no ratio (e.g. the user time of a command that only waits)")
    overall = _overall_rows(sa, sb, rows, alpha, seed, rank, notes)
    # Two families, each Holm-corrected at alpha/2 when both exist (Bonferroni across the two,
    # so the chance of any false alarm stays below alpha): the shift across all points, which
    # finds an effect every point shares, and each point on its own, which finds where it is.
    family_alpha = alpha / 2 if overall else alpha
    for family in (overall, [r for r in rows if not r.untested]):
        for r, p in zip(family, stats.holm([r.p_value for r in family])):
            band = counted_min_effect if r.counted else min_effect
            r.p_adjusted, r.alpha_used, r.min_effect = p, family_alpha, band
            r.direction = higher_is_better(r.measure, config)
            r.significant = p < family_alpha and (r.lo > 1.0 + band or r.hi < 1.0 - band)
            if r.significant and r.direction is not None:
                r.better = "B" if (r.ratio > 1) == r.direction else "A"
    if overall:
        notes.append(f"'all points' rows: van Elteren's stratified rank-sum test over the "
                     f"{len(set(sa) & set(sb))} matched points; those rows and the per-point rows are "
                     f"two families, each Holm-corrected at alpha/2 = {family_alpha:g}")
    for r in rows:
        if r.untested:
            r.direction = higher_is_better(r.measure, config)
    counted_names = [measure_title(m) for m in dict.fromkeys(r.measure for r in rows if r.counted)]
    if counted_names:
        notes.append(compare_counted.note(counted_names, counted_min_effect))
    rows = overall + rows
    if small and rank:
        low = min(r.level for r in rows)
        notes.append(f"{small} comparisons have fewer than {MIN_N_FOR_CI} runs on a side: their "
                     f"intervals reach only the level printed (down to {100 * low:.0f} %) and "
                     "Mann-Whitney can hardly reject; measure more runs")
    elif small:
        notes.append(f"{small} comparisons have fewer than {MIN_N_FOR_CI} runs on a side: their "
                     "bootstrap CIs cover less than the stated level and Mann-Whitney can hardly "
                     "reject; measure more runs")
    only_a = sorted(ta[k] for k in set(sa) - set(sb))
    only_b = sorted(tb[k] for k in set(sb) - set(sa))
    return rows, only_a, only_b, notes


def _two_speeds(values: Sequence[float]) -> Any:
    """stats.modes' verdict on one side's values: the Modes where there are two, else None."""
    if len(values) < MIN_N_FOR_MODES or min(values) <= 0:
        return None
    m = detect_modes(values)
    return m if m.multimodal else None


def _overall_rows(sa: dict, sb: dict, rows: list[CompareRow], alpha: float, seed: int,
                  rank: bool = False, notes: list[str] | None = None) -> list[CompareRow]:
    """One row per measure across every matched point (van Elteren), where there are several."""
    keys = sorted(set(sa) & set(sb), key=str)
    if len(keys) < 2:
        return []
    out = []
    for measure in sorted({r.measure for r in rows}, key=_measure_order):
        strata = [(sa[k][measure], sb[k][measure]) for k in keys if measure in sa[k] and measure in sb[k]]
        if len(strata) < 2:
            continue
        _, p = van_elteren(strata)
        level = 1 - alpha
        if rank:
            ratio, lo, hi, level = stratified_ratio_ci(strata, level=1 - alpha)
        else:
            ratio, lo, hi = pooled_ratio(strata, confidence=1 - alpha, seed=seed)
        if ratio != ratio:
            if notes is not None:
                notes.append(f"{measure_title(measure)}: no 'all points' row, every point has a "
                             "run of 0 on a side (no ratio)")
            continue
        all_a = [x for a, _ in strata for x in a]
        all_b = [x for _, b in strata for x in b]
        out.append(CompareRow(f"all {len(strata)} points", measure, len(all_a), len(all_b),
                              median(all_a), median(all_b), ratio, lo, hi, p, level=level, overall=True))
    return out


def _measure_order(measure: str) -> tuple[int, str]:
    """Wall time, CPU time, memory, energy, the instrument's counts, then metrics by name."""
    fixed = ("wall_s", "user_s", "maxrss_kb", "energy_j", "energy_per_event_j",
             *(f"metric:{m}" for m in cachegrind.ALL_MEASURES))
    return (fixed.index(measure), "") if measure in fixed else (len(fixed), measure)


def check_same_kind(ca: Any, cb: Any, what_a: str = "") -> None:
    """Refuse campaigns of two study kinds: their design points cannot be matched."""
    if ca.study != cb.study:
        a = what_a or f"campaign {ca.id}"
        raise PerflabError(f"{a} is a '{ca.study}' campaign and campaign {cb.id} a '{cb.study}' one: "
                           "compare campaigns of the same study (list them with 'perflab results')")


def run_compare(config: CompareConfig, store: Any) -> CompareResult:
    """Compare the stored campaigns config.a and config.b (see the module docstring)."""
    # store.campaign raises a one-line PerflabError for an unknown id.
    ca, cb = store.campaign(config.a), store.campaign(config.b)
    check_same_kind(ca, cb)
    if not 0.0 <= config.min_effect < 1.0:
        raise PerflabError(f"--min-effect {100 * config.min_effect:g}%: give a percentage from 0 to "
                           "under 100, e.g. --min-effect 2%")
    meas_a, meas_b = store.measurements(config.a), store.measurements(config.b)
    cfg = directed(cb.config or {}, config.metric, config.higher_is_better, cb.id)
    rows, only_a, only_b, notes = compare_measurements(
        ca.study, meas_a, meas_b, alpha=config.alpha, seed=config.seed, config=cfg,
        min_effect=config.min_effect, interval="rank", modes=True, counted_min_effect=config.counted_min_effect)
    shared = set(series(ca.study, meas_a)[0]) & set(series(cb.study, meas_b)[0]) if not rows else ()
    if shared:
        # one observation a side (instances of 1 round): an empty table would read as 'no change'
        raise PerflabError(f"campaigns {config.a} and {config.b} share {len(shared)} point(s), but no "
                           "point has 2 or more observations on both sides, so nothing can be "
                           "compared; measure more runs or rounds (5 a side for a 95 % interval)")
    name, _ = primary_metric(cfg)
    if not name and cfg.get("instrument") == cachegrind.NAME:
        name = "instructions"  # a simulated run's wall time is Valgrind's, not the program's
    primary = f"metric:{name}" if name and any(r.measure == f"metric:{name}" for r in rows) else "wall_s"
    return CompareResult(config.a, config.b, ca.study, cb.study, config.alpha, rows, only_a, only_b,
                         notes, min_effect=config.min_effect, primary=primary,
                         counted_min_effect=config.counted_min_effect)
