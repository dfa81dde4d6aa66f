"""Compare two campaigns of one study kind (two machines, dates or builds) measure by measure.

Measurements are matched on the study's design keys (studies/compare/keys.py); for each
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
(studies/compare/counted.py); equal constant counts are shown, untested. A simulated campaign
without a primary metric is headed by instructions (its wall time is Valgrind's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from perflab import stats
from perflab.errors import PerflabError
from perflab.measure import cachegrind
from perflab.platform.tune import state as tune_state
from perflab.stats import judge, median
from perflab.stats.modes import detect_modes
from perflab.stats.speeds import within_speeds, worth_looking
from perflab.stats.stratified import pooled_ratio, stratified_ratio_ci, van_elteren
from perflab.studies.compare import counted as counting
from perflab.studies.compare import replicated
from perflab.studies.compare.keys import directed, higher_is_better, measure_title, primary_metric, series
from perflab.studies.compare.result import DRIFT, CompareResult, CompareRow  # noqa: F401 (re-exported)

# Below this many runs per side the percentile bootstrap interval covers less than it says
# (52 % at n=2, 74 % at n=3 for a nominal 95 %), and Mann-Whitney cannot reject at 0.05.
MIN_N_FOR_CI = 5
# Smaller changes are never called significant by `perflab compare`: below 1 % a difference
# between two campaigns is as likely the machine's (drift, another day) as the code's.
DEFAULT_MIN_EFFECT = 0.01
# Fewer runs a side and stats.modes cannot see two speeds (its own minimum).
MIN_N_FOR_MODES = 10


NAME = "compare"  # a reading study (studies.base.ReadingStudy): its entry is read, below

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
    # Replicate campaigns beyond a and b (studies/compare/replicated.py): `compare 3,4 8,9`.
    more_a: tuple[int, ...] = ()
    more_b: tuple[int, ...] = ()


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
    split: dict = {}  # (point, measure) -> its speeds' strata where compared within two
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
            counted = counting.is_counted(measure, a, b)
            if len(set(a) | set(b)) == 1 and not counted:
                continue  # the same constant on both sides (event counts): nothing to test
            if stats.median(a) == 0 or (rank and min(min(a), min(b)) <= 0):
                # No ratio to a zero (user time of `sleep`, a metric that is 0): said, not crashed.
                zero.setdefault(measure, []).append(ta[key])
                continue
            if counted:
                p, ratio, lo, hi, level = counting.test(a, b, alpha)
                rows.append(CompareRow(ta[key], measure, len(a), len(b), stats.median(a), stats.median(b),
                                       ratio, lo, hi, p, level=level, counted=True))
                continue
            small += min(len(a), len(b)) < MIN_N_FOR_CI
            if rank:
                # Like with like: within each speed where the pooled runs have two (stats.speeds).
                w = within_speeds(a, b, level=1 - alpha, look=modes and (worth_looking(a) or worth_looking(b)),
                                  higher_is_better=higher_is_better(measure, config))
                row = CompareRow(ta[key], measure, len(a), len(b), stats.median(a), stats.median(b),
                                 w.ratio, w.low, w.high, 1.0 if w.undecided else w.p, level=w.level)
                row.spread = judge.log_spread(a, b)
                if w.two:
                    row.speeds = w
                    split[(key, measure)] = w.strata
                    notes.extend(f"{measure_title(measure)} of {ta[key]}: {n}"
                                 for n in (*w.notes, *([w.undecided] if w.undecided else [])))
            else:
                c = stats.compare(b, a, alpha=alpha, confidence=1 - alpha, seed=seed)
                row = CompareRow(ta[key], measure, len(a), len(b), stats.median(a),
                                 stats.median(b), c.ratio, c.lo, c.hi, c.p_value, level=1 - alpha)
                row.spread = judge.log_spread(a, b)
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
    overall = _overall_rows(sa, sb, rows, alpha, seed, rank, notes, split)
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
            step = family_alpha / max(len(family), 1)  # Holm's first step
            if not r.counted and not r.overall and judge.min_p(r.n_a, r.n_b) >= step:
                # even runs wholly apart could not pass: "same" would claim what the runs cannot show
                r.blind = True
                r.runs_needed = judge.runs_needed_at(r.spread,
                                                     max(abs(r.change), band, 0.01), step)
    if overall:
        notes.append(f"'all points' rows: van Elteren's stratified rank-sum test over the "
                     f"{len(set(sa) & set(sb))} matched points; those rows and the per-point rows are "
                     f"two families, each Holm-corrected at alpha/2 = {family_alpha:g}")
    for r in rows:
        if r.untested:
            r.direction = higher_is_better(r.measure, config)
    counted_names = [measure_title(m) for m in dict.fromkeys(r.measure for r in rows if r.counted)]
    if counted_names:
        notes.append(counting.note(counted_names, counted_min_effect))
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
                  rank: bool = False, notes: list[str] | None = None,
                  split: dict | None = None) -> list[CompareRow]:
    """One row per measure across every matched point (van Elteren), where there are several."""
    keys = sorted(set(sa) & set(sb), key=str)
    if len(keys) < 2:
        return []
    out = []
    for measure in sorted({r.measure for r in rows}, key=_measure_order):
        strata = [(sa[k][measure], sb[k][measure]) for k in keys if measure in sa[k] and measure in sb[k]]
        if len(strata) < 2:
            continue
        if split:
            # a point compared within two speeds is two strata: like with like across the points too
            strata = [s for k in keys if measure in sa[k] and measure in sb[k]
                      for s in split.get((k, measure), [(sa[k][measure], sb[k][measure])])]
        all_a = [x for a, _ in strata for x in a]
        all_b = [x for _, b in strata for x in b]
        if all(counting.is_counted(measure, a, b) for a, b in strata):
            # Counts at every point: ranks would waste them (2 runs a point cannot reject).
            p, ratio, lo, hi, level = counting.stratified_test(strata, alpha)
            out.append(CompareRow(f"all {len(strata)} points", measure, len(all_a), len(all_b), median(all_a),
                                  median(all_b), ratio, lo, hi, p, level=level, overall=True, counted=True))
            continue
        _, p = van_elteren(strata)
        level = 1 - alpha
        if rank:
            ratio, lo, hi, level = stratified_ratio_ci(strata, level=1 - alpha)
        else:
            ratio, lo, hi = pooled_ratio(strata, confidence=1 - alpha, seed=seed)
        if math.isnan(ratio):
            if notes is not None:
                notes.append(f"{measure_title(measure)}: no 'all points' row, every point has a "
                             "run of 0 on a side (no ratio)")
            continue
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
    ids_a, ids_b = (config.a, *config.more_a), (config.b, *config.more_b)
    meas_a, meas_b = store.measurements(config.a), store.measurements(config.b)
    cfg = directed(cb.config or {}, config.metric, config.higher_is_better, cb.id)
    if len(ids_a) > 1 or len(ids_b) > 1:
        replicated.check_sides(ids_a, ids_b)
        for cid in (*ids_a[1:], *ids_b[1:]):
            check_same_kind(ca, store.campaign(cid))
        rows, only_a, only_b, notes = replicated.replicated_rows(
            ca.study, [store.measurements(c) for c in ids_a], [store.measurements(c) for c in ids_b],
            config.alpha, cfg, config.min_effect, CompareRow, _measure_order)
    else:
        rows, only_a, only_b, notes = compare_measurements(
            ca.study, meas_a, meas_b, alpha=config.alpha, seed=config.seed, config=cfg, min_effect=config.min_effect,
            interval="rank", modes=True, counted_min_effect=config.counted_min_effect)
    shared = set(series(ca.study, meas_a)[0]) & set(series(cb.study, meas_b)[0]) if not rows else ()
    if shared:
        # one observation a side (instances of 1 round): an empty table would read as 'no change'
        raise PerflabError(f"campaigns {config.a} and {config.b} share {len(shared)} point(s), but no "
                           "point has 2 or more observations on both sides, so nothing can be "
                           "compared; measure more runs or rounds (5 a side for a 95 % interval)")
    differs = tune_state.difference((ca.labels or {}).get("machine_state"), (cb.labels or {}).get("machine_state"))
    if differs:
        notes.insert(0, differs)
    name, _ = primary_metric(cfg)
    if not name and cfg.get("instrument") == cachegrind.NAME:
        name = "instructions"  # a simulated run's wall time is Valgrind's, not the program's
    primary = f"metric:{name}" if name and any(r.measure == f"metric:{name}" for r in rows) else "wall_s"
    return CompareResult(config.a, config.b, ca.study, cb.study, config.alpha, rows, only_a, only_b,
                         notes, min_effect=config.min_effect, primary=primary,
                         counted_min_effect=config.counted_min_effect, campaigns_a=ids_a, campaigns_b=ids_b)


# The reading study's shape (studies.base.ReadingStudy): NAME, Config, read(config, store) -> Result.
Config = CompareConfig
read = run_compare
