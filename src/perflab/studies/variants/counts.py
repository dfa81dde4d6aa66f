"""Variants ranked by simulated counts (--instrument cachegrind) beside their measured time.

Each variant runs COUNT_RUNS times more under Cachegrind (params instrument=cachegrind, apart
from the timed rounds, whose wall time stays native). Per variant: the median of each count;
against the baseline, for instructions and estimated cycles, B/A by judge.counted_test
(Welch's t on logs, exact where both sides are constant: the test the gate and compare use),
Holm-corrected across the variants per measure; a count that moves by more than
judge.COUNTED_SPREAD between runs is not tested here (a note says so). The variants of the
same result are ranked by each count (fewest first). Where counts and time disagree (a variant
significantly better by a count and significantly worse by time, or the other way; or the
fastest by time is not the first by estimated cycles) the disagreement is named with its cause:
the simulation ignores memory-level parallelism, frequency and the real machine's prefetchers.
"""

from __future__ import annotations

from typing import Any, Sequence

from perflab.measure.cachegrind import MEASURES
from perflab.stats import holm, median
from perflab.stats.interval import CI
from perflab.stats import judge
from perflab.studies.variants.result import Comparison, VariantsResult, pct

COUNT_RUNS = 2  # counts are deterministic: 2 runs show their spread (and the test needs 2)
RANKED = ("estimated_cycles", "instructions")  # the counts the variants are ranked by
CAUSE = "simulation ignores memory-level parallelism, frequency and the real machine's prefetchers"
TITLES = {"estimated_cycles": "estimated cycles", "instructions": "instructions"}


def analyse_counts(result: VariantsResult, simulated: Sequence[tuple[dict, Any]]) -> None:
    """Fill each variant's counts and count comparisons, the rankings and the disagreements."""
    values: dict[str, dict[str, list[float]]] = {}
    for params, res in simulated:
        if res.ok:
            for m in MEASURES:
                if m in res.metrics:
                    values.setdefault(params["variant"], {}).setdefault(m, []).append(float(res.metrics[m]))
    for o in result.variants:
        o.counts = {m: median(xs) for m, xs in values.get(o.name, {}).items()}
    base = values.get(result.baseline, {})
    for m in RANKED:
        tests: dict[str, tuple[float, float, float, float, int]] = {}
        for o in result.variants:
            a, b = base.get(m, []), values.get(o.name, {}).get(m, [])
            if o.name == result.baseline or len(a) < 2 or len(b) < 2:
                continue
            if not judge.counted(a, b):
                o.notes.append(f"{TITLES[m]} varied between simulated runs by more than "
                               f"{judge.COUNTED_SPREAD:.0e} (here or in the baseline): not ranked as a count")
                continue
            p, lo, hi, level, _ = judge.counted_test(a, b, result.alpha)
            tests[o.name] = (p, lo, hi, level, min(len(a), len(b)))
        names = list(tests)
        for n, p_adj in zip(names, holm([tests[n][0] for n in names]) if names else []):
            p, lo, hi, level, pairs = tests[n]
            ratio = (lo * hi) ** 0.5
            result.row(n).count_comparisons[m] = Comparison(
                m, ratio, CI(lo, hi, level), p_raw=p, p=p_adj, effect=0.0,
                significant=p_adj < result.alpha, higher_is_better=False, pairs=pairs)
    same = [o for o in result.variants if o.status in ("baseline", "measured")]
    result.count_ranking = {m: [o.name for o in sorted(same, key=lambda o: o.counts[m])]
                            for m in RANKED if same and all(m in o.counts for o in same)}
    result.disagreements = _disagreements(result)


def _disagreements(result: VariantsResult) -> list[str]:
    """Each place where a count and the measured time point opposite ways, with the cause."""
    out = []
    label = "elapsed" if result.primary == "wall_s" else result.primary
    for o in result.variants:
        t = o.comparisons.get(result.primary)
        if o.status != "measured" or t is None or t.better is None:
            continue
        against = [c for m in RANKED if (c := o.count_comparisons.get(m)) is not None
                   and c.better is not None and c.better != t.better]
        if against:
            counts = " and ".join(f"{pct(c.ratio)} {TITLES[c.quantity]}" for c in against)
            word = "faster" if t.better else "slower"
            out.append(f"{o.name} has {counts} against {result.baseline} but is {word} by {label} "
                       f"({pct(t.ratio)}, Holm p={t.p:.2g}): {CAUSE}")
    first = result.count_ranking.get("estimated_cycles", [None])[0]
    if result.fastest and first and first != result.fastest:
        out.append(f"the fastest by {label} is {result.fastest}, the first by estimated cycles {first}: {CAUSE}")
    return out


def counts_verdict(result: VariantsResult) -> str:
    """'; by simulated counts (cachegrind, I1=...): estimated cycles O3 < O2 < O0, ...'."""
    if not result.instrument:
        return ""
    if not result.count_ranking:
        return f"; no simulated counts ranked ({result.instrument}: every variant needs {COUNT_RUNS} runs)"
    ranks = "; ".join(f"{TITLES[m]} {' < '.join(names)}" for m, names in result.count_ranking.items())
    text = f"; by simulated counts ({result.instrument}, cache model {result.cache_model}), fewest first: {ranks}"
    if result.disagreements:
        return text + "; counts and time disagree: " + "; ".join(result.disagreements)
    return text + "; counts and time do not disagree where both are significant"
