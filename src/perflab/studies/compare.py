"""Compare two campaigns of one study kind (two machines, dates or builds) measure by measure.

Measurements are matched on the study's design keys (studies/compare_keys.py); for each
matched point and each measure (wall time, max RSS, user time, energy per run and per event
where both campaigns measured it, every metric) the ratio of medians B/A comes with a
percentile bootstrap CI at level 1 - alpha and a two-sided Mann-Whitney p-value,
Holm-corrected over all the comparisons made. A comparison is
significant when its adjusted p is below alpha and its CI excludes 1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from perflab import stats
from perflab.errors import PerflabError
from perflab.stats import median
from perflab.stats.stratified import pooled_ratio, van_elteren
from perflab.studies.compare_keys import higher_is_better, measure_title, series

# Below this many runs per side the percentile bootstrap interval covers less than it says
# (52 % at n=2, 74 % at n=3 for a nominal 95 %), and Mann-Whitney cannot reject at 0.05.
MIN_N_FOR_CI = 5


@dataclass(frozen=True)
class CompareConfig:
    a: int
    b: int
    alpha: float = 0.05
    seed: int = 0


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
    better: str = ""  # "A", "B" or "" (not significant)
    level: float = 0.95  # confidence level of [lo, hi]
    overall: bool = False  # across every matched point (van Elteren), not one point

    @property
    def change(self) -> float:
        """Relative change B/A - 1."""
        return self.ratio - 1.0

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "measure": self.measure, "measure_title": measure_title(self.measure),
                "n_a": self.n_a, "n_b": self.n_b, "median_a": self.median_a,
                "median_b": self.median_b, "ratio": self.ratio,
                "ci": {"low": self.lo, "high": self.hi, "level": self.level},
                "p_value": self.p_value, "p_adjusted": self.p_adjusted,
                "significant": self.significant, "better": self.better, "overall": self.overall}


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

    @property
    def verdict(self) -> str:
        sig = [r for r in self.rows if r.significant]
        if not self.rows:
            return f"campaigns {self.a} and {self.b} share no measurement to compare."
        if not sig:
            return (f"no significant difference between campaign {self.a} and {self.b} "
                    f"in {len(self.rows)} comparisons (Holm, alpha {self.alpha:g}); this does not "
                    "show they are equal, only that these runs cannot tell them apart.")
        top = max(sig, key=lambda r: abs(r.ratio - 1))
        return (f"{len(sig)} of {len(self.rows)} comparisons differ significantly; largest: "
                f"{measure_title(top.measure)} of {top.key} is {100 * (top.ratio - 1):+.1f} % in B "
                f"(campaign {self.b}), {100 * top.level:.0f}% CI of B/A [{top.lo:.4g}, {top.hi:.4g}].")

    def as_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "study_a": self.study_a, "study_b": self.study_b,
                "alpha": self.alpha, "verdict": self.verdict,
                "rows": [r.as_dict() for r in self.rows],
                "unmatched_a": self.unmatched_a, "unmatched_b": self.unmatched_b, "notes": self.notes}


def compare_measurements(
    study: str, meas_a: Sequence[Any], meas_b: Sequence[Any], alpha: float = 0.05, seed: int = 0,
    config: dict | None = None, measures: Sequence[str] | None = None,
) -> tuple[list[CompareRow], list[str], list[str], list[str]]:
    """Rows for every matched point and measure (only ``measures`` when given), Holm-corrected.

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
    for key in sorted(set(sa) & set(sb), key=lambda k: ta[k]):
        wanted = sorted(set(sa[key]) & set(sb[key]), key=_measure_order)
        if measures is not None:
            wanted = [m for m in measures if m in wanted]
        for measure in wanted:
            a, b = sa[key][measure], sb[key][measure]
            if len(a) < 2 or len(b) < 2:
                continue
            if len(set(a) | set(b)) == 1:
                continue  # the same constant on both sides (event counts): nothing to test
            if stats.median(a) == 0:
                continue  # no ratio to a zero median (a metric that is 0 in A)
            small += min(len(a), len(b)) < MIN_N_FOR_CI
            c = stats.compare(b, a, alpha=alpha, confidence=1 - alpha, seed=seed)
            rows.append(CompareRow(ta[key], measure, len(a), len(b), stats.median(a),
                                   stats.median(b), c.ratio, c.lo, c.hi, c.p_value, level=1 - alpha))
    overall = _overall_rows(sa, sb, rows, alpha, seed)
    # Two families, each Holm-corrected at alpha/2 when both exist (Bonferroni across the two,
    # so the chance of any false alarm stays below alpha): the shift across all points, which
    # finds an effect every point shares, and each point on its own, which finds where it is.
    family_alpha = alpha / 2 if overall else alpha
    for family in (overall, rows):
        for r, p in zip(family, stats.holm([r.p_value for r in family])):
            r.p_adjusted = p
            r.significant = p < family_alpha and not (r.lo <= 1.0 <= r.hi)
            if r.significant:
                r.better = "B" if (r.ratio > 1) == higher_is_better(r.measure, config) else "A"
    if overall:
        notes.append(f"'all points' rows: van Elteren's stratified rank-sum test over the "
                     f"{len(set(sa) & set(sb))} matched points; those rows and the per-point rows are "
                     f"two families, each Holm-corrected at alpha/2 = {family_alpha:g}")
    rows = overall + rows
    if small:
        notes.append(f"{small} comparisons have fewer than {MIN_N_FOR_CI} runs on a side: their "
                     "bootstrap CIs cover less than the stated level and Mann-Whitney can hardly "
                     "reject; measure more runs")
    only_a = sorted(ta[k] for k in set(sa) - set(sb))
    only_b = sorted(tb[k] for k in set(sb) - set(sa))
    return rows, only_a, only_b, notes


def _overall_rows(sa: dict, sb: dict, rows: list[CompareRow], alpha: float, seed: int) -> list[CompareRow]:
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
        ratio, lo, hi = pooled_ratio(strata, confidence=1 - alpha, seed=seed)
        if ratio != ratio:
            continue
        all_a = [x for a, _ in strata for x in a]
        all_b = [x for _, b in strata for x in b]
        out.append(CompareRow(f"all {len(strata)} points", measure, len(all_a), len(all_b),
                              median(all_a), median(all_b), ratio, lo, hi, p, level=1 - alpha, overall=True))
    return out


def _measure_order(measure: str) -> tuple[int, str]:
    """Wall time, CPU time, memory, energy, then the workload's metrics by name."""
    fixed = ("wall_s", "user_s", "maxrss_kb", "energy_j", "energy_per_event_j")
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
    rows, only_a, only_b, notes = compare_measurements(
        ca.study, store.measurements(config.a), store.measurements(config.b),
        alpha=config.alpha, seed=config.seed, config=cb.config)
    return CompareResult(config.a, config.b, ca.study, cb.study, config.alpha, rows, only_a, only_b, notes)
