"""How `perflab run` compares its commands: by what (wall time or the primary metric, in its
direction), with what (a reference fixed before the runs: the first command or --reference), and
what a sample with two speeds rests on.

Each other command against the reference: the Hodges-Lehmann ratio of the ranked measure with
Moses' interval (the Mann-Whitney test's own) at 1 - alpha/(k-1), Bonferroni over the k-1
comparisons, so every "slower", "faster", "better" or "worse" of one run holds together at 5 %.
The reference is named before any run: testing the others against the sample-fastest chose the
reference from the data and called equal commands "slower" in 7.2 % of simulated runs of 5, 9.8 %
of 8 (checks/run.py). Two speeds: stats.modes on the ranked values of a sample that looks
noisy; their shares and medians are named instead of "outliers".
"""

from __future__ import annotations

import math
import statistics

from perflab.stats import mad_outliers
from perflab.stats.interval import median_ci
from perflab.stats.judge import stratified_min_detectable, stratified_runs_needed
from perflab.stats.modes import CAUSE, detect_modes
from perflab.stats.sequential import decide
from perflab.stats.shift import runs_to_reach
from perflab.stats.speeds import within_speeds
from perflab.studies.run.result import Benchmark

CV_WARN = 0.05
WALL = "wall time"  # the measure ranked by where no primary metric is named
ALPHA = 0.05  # family-wise: every verdict of one run together
# A difference smaller than this is not called even when significant: long runs make 0.1 %
# significant, and at 1 % a timing is within the drift of most machines.
MIN_EFFECT = 0.01


def ranking(primary_metric: str | None, higher_is_better: bool | None) -> tuple[str, bool]:
    """What the commands are ranked and compared by: the primary metric in its declared
    direction (higher is better unless the workload or the command line says lower), else wall
    time, lower is better."""
    if primary_metric:
        return primary_metric, higher_is_better is not False
    return WALL, False


def ranked_values(b: Benchmark, measure: str) -> list[float]:
    """The benchmark's values of ``measure`` over its successful runs that measured it."""
    if measure == WALL:
        return list(b.times)
    return [v for v in b.metrics.get(measure, ()) if v is not None]


def two_speeds_tested(values: list[float]) -> bool:
    """Whether two_speeds fits a mixture to ``values``: 10 or more positive runs that look noisy."""
    if len(values) < 10 or not all(0 < v < math.inf for v in values):
        return False
    return statistics.stdev(values) / statistics.fmean(values) > CV_WARN or bool(mad_outliers(values))


def two_speeds(values: list[float]):
    """The two speeds of a sample (stats.modes), or None. Only a sample that looks noisy (CV
    above 5 % or MAD outliers) is tested: a quiet one cannot hide two speeds worth naming, and
    it keeps numpy and scipy out of a quiet run's analysis."""
    if not two_speeds_tested(values):
        return None
    found = detect_modes(values)
    return found if found.multimodal else None


def two_speeds_line(b: Benchmark) -> str:
    """"'cmd': runs at two speeds: 57 % at 50.3 ms, 43 % at 80.4 ms (...)" from b.modes."""
    m = b.modes or {}
    what = "wall time" if m.get("measure", WALL) == WALL else m["measure"]
    parts = ", ".join(f"{md['share']:.0%}{' of runs' if i == 0 else ''} at {_value(md['center'], what)}"
                      for i, md in enumerate(m.get("modes", ())))
    return (f"'{b.command}': two speeds, not outliers: {parts} ({what}; a mixture of two against "
            f"one speed with a tail, by BIC); its one median depends on how many runs fell at each "
            f"speed; {CAUSE}")


def _value(v: float, measure: str) -> str:
    if measure != "wall time":
        return f"{v:.4g}"
    return f"{v * 1e3:.4g} ms" if v < 1 else f"{v:.4g} s"


def compare(benches: list[Benchmark], measure: str, higher: bool, ref_name: str | None,
            level: float | None = None, min_effect: float = MIN_EFFECT) -> list[str]:
    """Each other benchmark against the reference in ``measure``: Hodges-Lehmann ratio with
    Moses' interval (the Mann-Whitney test's own) at 1 - alpha/(k-1), Bonferroni over the k-1
    comparisons, so every "better" or "worse" holds together at alpha; a difference under
    ``min_effect`` is not called, nor one whose interval could not reach its level (too few runs).
    ``level``: a sequential look's level (studies/run/looks.py); each comparison then also gets
    its ``decision`` (stats.sequential.decide: 'larger', 'smaller', 'within' or None)."""
    warnings: list[str] = []
    values = {b.command: ranked_values(b, measure) for b in benches}
    if measure != WALL:
        for b in benches:
            if b.summary and not values[b.command]:
                warnings.append(f"'{b.command}': the primary metric {measure} was measured in none of "
                                "its runs: it is left out of the ranking")
    ok = [b for b in benches if len(values[b.command]) > 0]
    ref = next((b for b in ok if b.command == ref_name), None)
    if len(ok) < 2:
        return warnings
    if ref is None:
        ref = ok[0]
        warnings.append(f"the reference '{ref_name}' has no {_measured(measure)}: the others are "
                        f"compared with '{ref.command}' instead")
    sequential = level is not None
    level = level if level is not None else 1 - ALPHA / (len(ok) - 1)
    ref_x = values[ref.command]
    for b in ok:
        if b is ref:
            b.relative = {"ratio": 1.0, "low": 1.0, "high": 1.0, "level": level, "target": level,
                          "significant": False, "reference": True, "verdict": None}
            continue
        # Only the rounds both ran: hyperfine's rule gives each command its own number of runs,
        # and a command that stopped earlier missed the drift of the later rounds (under the
        # 'loaded' model that alone gave 5.5 % false "differs" at 5 commands).
        m = min(len(values[b.command]), len(ref_x))
        xs, ref_m = values[b.command][:m], ref_x[:m]
        if not all(0 < v < math.inf for v in (*xs, *ref_m)):
            warnings.append(f"'{b.command}': {measure} has values <= 0, so no ratio to the reference: "
                            "rank by a positive metric")
            continue
        # Like with like: where the two samples run at two speeds, within each speed (stats.speeds);
        # only a sample that looks noisy is looked at (a quiet one keeps numpy unloaded).
        w = within_speeds(ref_m, xs, level=level, with_p=False,
                          look=two_speeds_tested(xs) or two_speeds_tested(ref_m), higher_is_better=higher)
        ratio = w.ratio
        reached = w.level >= level - 1e-9 and not w.undecided
        up = reached and w.low > 1.0 and ratio >= 1 + min_effect
        down = reached and w.high < 1.0 and ratio <= 1 / (1 + min_effect)
        b.relative = {"ratio": ratio, "low": w.low, "high": w.high, "level": w.level, "target": level,
                      "significant": up or down, "reference": False,
                      "verdict": None if not (up or down) else _word(up, measure, higher),
                      "speeds": w.line(), "method": w.method, "undecided": w.undecided,
                      "min_effect": min_effect}
        if sequential:
            b.relative["decision"] = decide(ratio, w.low, w.high, min_effect) if reached else None
            if b.relative["decision"] == "within":  # an interval inside the margin shows no change of m
                b.relative["verdict"] = None
        pair = f"'{b.command}' against '{ref.command}'"
        if w.two:
            warnings.append(f"{pair}: {w.line()}" + "".join(f"; {n}" for n in w.notes)
                            + ("" if sequential else _resolution(w, level, up or down, len(xs))))
        if w.undecided:
            warnings.append(f"{pair}: {w.undecided}, so neither is called better")
        elif w.level < level - 1e-9:
            warnings.append(f"{pair}: {len(xs)} and {len(ref_m)} runs "
                            f"cannot reach {level:.1%} confidence (at most {w.level:.0%}), so neither "
                            f"is called better; give at least {runs_to_reach(level)} runs each")
    return warnings


def _resolution(w, level: float, called: bool, runs: int) -> str:
    """Where a comparison within two speeds called nothing: the smallest difference its runs see
    with 80 % power and the runs a command that would see MIN_EFFECT (stats.judge's rule on the
    speeds' own spread)."""
    if called or not w.strata:
        return ""
    seen = stratified_min_detectable(w.strata, 1 - level)
    # runs at each speed in equal numbers a side; a command's runs are their sum over the speeds
    need = stratified_runs_needed(w.strata, MIN_EFFECT, 1 - level) * len(w.strata)
    if need <= runs:
        return ""
    return (f"; these runs see a difference of {seen:.1%} or more (80 % power); about {need} runs "
            f"each (--runs {need}) would see {MIN_EFFECT:.0%}")


def _measured(measure: str) -> str:
    return "successful run" if measure == WALL else f"run that measured {measure}"


def _word(larger: bool, measure: str, higher: bool) -> str:
    """What a ratio significantly above (``larger``) or below 1 means for this measure."""
    if measure == WALL:
        return "slower" if larger else "faster"
    return "better" if larger == higher else "worse"


def precise(xs: list[float], precision: float) -> bool:
    """Whether the median's CI reaches 95 % and lies within +-precision of the median."""
    ci = median_ci(xs)
    med = statistics.median(xs)
    return ci.level >= 0.95 and ci.low >= med * (1 - precision) and ci.high <= med * (1 + precision)


def precision_missed(benches: list[Benchmark], precision: float, max_runs: int | None) -> list[str]:
    """A --precision target that --max-runs cut short: one line per benchmark, with the
    precision its median's CI reached."""
    out = []
    for b in benches:
        if not b.times or precise(b.times, precision):
            continue
        ci, med = median_ci(b.times), statistics.median(b.times)
        reached = max(med - ci.low, ci.high - med) / med if med > 0 else math.inf
        out.append(f"'{b.command}': --precision {precision:.1%} not reached: stopped at "
                   f"--max-runs {max_runs} with the median's {ci.label()} within "
                   f"+-{reached:.1%} of it; raise --max-runs or accept the wider interval")
    return out
