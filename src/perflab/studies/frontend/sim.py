"""The front end without a PMU: simulated I1 misses per dispatch against code size.

Under ``--instrument cachegrind`` every point of the code-size scan runs under Valgrind's
Cachegrind with a named cache model (platform/cache_model.py), which counts the instructions
(Ir), the I1 misses (I1mr) and the last-level misses of instruction fetches (ILmr) of the whole
process. Per size: each count over the run's dispatches, the median over rounds, and the
run-to-run spread ((max - min) / median; zero where the program is deterministic). The knee is
the study's own (verdict.knee_fit: stats.knee on log2(code size)), fitted to I1 misses
per dispatch instead of time, and set beside the simulated I1 size, where a knee is expected.
The curve bends twice: up where the hot code outgrows the I1, flat again where every dispatch
already misses (about two octaves later), and one two-segment fit over both finds the second bend
(on this machine's default scan: 181 KiB for a 32 KiB I1). So the fit is made on the longest run of
sizes from the smallest whose knee rises, among those that still reach half the scan's largest
I1 misses per dispatch (so the rise is in it, and a fit of the start-up floor alone is never taken);
misses that do not double across the scan get no knee.
Counts are deterministic, so no statistical test is made; Valgrind models no TLB, so the iTLB
question (and with it 2 MiB text pages) stays open, and the verdict says so every time.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from perflab.measure.cachegrind import STABLE_ENV
from perflab.platform.cache_model import parse
from perflab.stats import median
from perflab.studies.frontend.result import Context, FrontendResult, KneeReport, Point
from perflab.model.units import fmt_bytes
from perflab.studies.frontend.verdict import knee_fit

if TYPE_CHECKING:  # the study module imports this one
    from perflab.studies.frontend.study import FrontendConfig

NAME = "cachegrind"
EVENTS = ("ILmr",)  # kept raw by the executor: MEASURES sum instruction and data LL misses
# per-dispatch field of a Point -> the run's metric it divides
COUNTS = (("i1_per_dispatch", "i1_misses"), ("ll_i_per_dispatch", "cg_ILmr"),
          ("ir_per_dispatch", "instructions"))
MEASURE = "I1 misses per dispatch"
MIN_POINTS = 5  # stats.knee's fewest (two segments of 3 sharing the breakpoint)
NO_TLB = ("Valgrind models no TLB, so whether iTLB misses (and 2 MiB text pages) slow this code "
          "stays open without hardware counters")


def references(cache_model: str) -> dict[str, int]:
    """The simulated caches a knee may sit at: the I1 (the expected knee) and the LL."""
    m = parse(cache_model)
    return {"simulated I1": m.i1.size, "simulated LL": m.ll.size}


def onset_knee(pts: list[Any], refs: dict[str, int]) -> tuple | None:
    """knee_fit of I1 misses per dispatch on the longest rising prefix of the scan (see above)."""
    def value(p: Any) -> float:
        return p.i1_per_dispatch

    pts = sorted(pts, key=lambda p: p.bytes)
    if not pts or max(value(p) for p in pts) < 2 * min(value(p) for p in pts):
        # misses that do not even double across the scan have no rise to place: on a flat start-up
        # floor stats.knee's BIC gain (blind to the scale of the noise) passed 10 in 1 of 50
        # simulated campaigns (checks/frontend.sim_check)
        return None
    half = max(value(p) for p in pts) / 2
    shortest = next(i for i, p in enumerate(pts) if value(p) >= half) + 1
    for cut in range(len(pts), max(shortest, MIN_POINTS) - 1, -1):
        k = knee_fit(pts[:cut], refs, value)
        if k is not None and k[2] > max(k[1], 0.0):
            return k
    return None


def analyse(config: FrontendConfig, ok: dict, failed: dict, result: FrontendResult, ctx: Context) -> FrontendResult:
    """Points of simulated counts per dispatch, the knee of I1 misses, the simulated verdict."""
    result.instrument, result.cache_model = config.instrument, config.cache_model
    result.cache_model_source = ctx.cache_model_source
    result.env = [list(pair) for pair in STABLE_ENV]
    result.references = references(config.cache_model)
    result.expected_knee_bytes = result.references["simulated I1"]
    for cpu, mode, b, n in sorted(set(ok) | set(failed), key=lambda k: k[2]):
        got = [r for _, r in ok.get((cpu, mode, b, n), [])]
        counts, spread = per_dispatch(got, config.iters)
        result.points.append(Point(cpu, mode, b, n, len(got), None, None, failed.get((cpu, mode, b, n), 0),
                                   count_spread=spread, **counts))  # type: ignore[arg-type]  # Point's count fields
    pts = [p for p in result.points if p.i1_per_dispatch is not None]
    if pts:
        k = onset_knee(pts, result.references)
        # The ignore: k is knee_fit's five fields, all before `measure`.
        result.knees.append(KneeReport(None, "4k", *k, measure=MEASURE) if k else  # type: ignore[misc]  # see above
                            KneeReport(None, "4k", None, measure=MEASURE))
    result.verdict, result.evidence = verdict(config, result)
    result.notes += notes(config, result)
    return result


def missing(res: Any) -> str | None:
    """Why a simulated run gives no counts (None when it has them all)."""
    absent = [metric for _, metric in COUNTS if metric not in res.metrics]
    return f"no simulated counts ({', '.join(absent)}) in the run" if absent else None


def per_dispatch(got: list[Any], iters: int) -> tuple[dict[str, float | None], float | None]:
    """Median over runs of each count / dispatches, and the largest run-to-run spread among them."""
    out: dict[str, float | None] = {}
    spreads = []
    for name, metric in COUNTS:
        vals = [r.metrics[metric] for r in got if metric in r.metrics]
        out[name] = float(median(vals)) / iters if vals else None
        if len(vals) > 1:
            mid = float(median(vals))
            spreads.append((max(vals) - min(vals)) / mid if mid else 0.0)
    return out, (max(spreads) if spreads else None)


def verdict(config: FrontendConfig, result: Any) -> tuple[str, list[str]]:
    """(one-line verdict, evidence) from the I1 curve, its knee and the simulated I1 size."""
    pts = sorted((p for p in result.points if p.i1_per_dispatch is not None), key=lambda p: p.bytes)
    if not pts:
        why = "; ".join(f"{k} ({v})" for k, v in result.failures.items()) or "no runs"
        return f"the scan failed: every run failed: {why}; {NO_TLB}", []
    first, last = pts[0], pts[-1]
    i1 = result.expected_knee_bytes
    curve = (f"{first.i1_per_dispatch:.3g} at {fmt_bytes(first.bytes)} -> {last.i1_per_dispatch:.3g} at "
             f"{fmt_bytes(last.bytes)}")
    knee = next((k for k in result.knees if k.measure == MEASURE), None)
    if knee is not None and knee.knee_bytes and knee.slope_after > max(knee.slope_before, 0.0):
        factor = i1 / knee.knee_bytes
        where = (f"at the simulated I1 size ({fmt_bytes(i1)}, {factor:.2g}x the knee)"
                 if abs(math.log2(factor)) <= 1.01 else  # a step of slack, as nearest_reference
                 f"not within 2x of the simulated I1 size ({fmt_bytes(i1)})")
        text = (f"simulated I1 misses per dispatch rise with code size past a knee at "
                f"{fmt_bytes(knee.knee_bytes)} ({curve}), {where}")
    elif last.bytes <= i1:
        text = (f"the hot code fits the simulated I1 ({fmt_bytes(i1)}) at every size: I1 misses per "
                f"dispatch {curve}, no knee in range")
    else:
        text = (f"simulated I1 misses per dispatch go {curve} with no rising knee in range (stats.knee "
                "needs 5 sizes and a BIC gain above 10); the simulated I1 is " + fmt_bytes(i1))
    evidence = [
        f"measure: Cachegrind's simulated I1 misses (I1mr) over the {config.iters} dispatches of each run, "
        f"cache model {result.cache_model} ({result.cache_model_source or 'given'}); simulated "
        "counts, no statistical test (the run-to-run spread below says how much they moved)",
        f"knee: the two-segment fit of {MEASURE} against log2(code size) (stats.knee, as for time) "
        "over the longest run of sizes from the smallest whose knee rises (further on the misses level "
        "off: every dispatch misses); it describes the curve, it is not a test of its cause",
        spread_line(pts),
        "does not show: the real machine's front end (its I1 and iTLB, prefetchers, the decoded-uop "
        "cache) or time; the counts are the whole process's, start-up and the n warm-up dispatches "
        "included",
    ]
    return f"{text}; {NO_TLB}", evidence


def spread_line(pts: list[Any]) -> str:
    """Whether every size counted the same in every round (determinism measured, not assumed)."""
    reps = min(p.reps for p in pts)
    spreads = [p.count_spread for p in pts if p.count_spread is not None]
    if reps < 2 or not spreads:
        return "run-to-run spread: not measured with one run per size (--reps 2 measures it)"
    if max(spreads) == 0:
        return f"run-to-run spread: 0, every size counted the same in all {reps} runs"
    i1 = [p.i1_per_dispatch for p in pts]
    across = max(i1) / min(i1) if min(i1) > 0 else float("inf")
    return (f"run-to-run spread: the counts of one size varied by up to {max(spreads):.2%} between its "
            f"{reps} runs (max - min over the median), against {across:.3g}x in I1 misses per "
            "dispatch across sizes")


def notes(config: FrontendConfig, result: Any) -> list[str]:
    """Where the scan cannot show what the user may expect of it."""
    out = []
    n = len({p.bytes for p in result.points})
    if n < MIN_POINTS:
        out.append(f"{n} sizes: stats.knee needs at least {MIN_POINTS} to fit a knee (more --points-per-octave "
                   "or a wider --min-size..--max-size)")
    i1 = result.expected_knee_bytes
    if i1 and result.points and not min(p.bytes for p in result.points) < i1 < max(p.bytes for p in result.points):
        out.append(f"the simulated I1 ({fmt_bytes(i1)}) lies outside the scanned sizes: its knee cannot "
                   "show (choose --min-size and --max-size around it, or --cache-model)")
    return out
