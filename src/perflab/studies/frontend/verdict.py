"""The front-end verdict: do 2 MiB text pages help, and what do the counters say?

A size counts as helped only when its one-sided Wilcoxon signed-rank test (per-round 4K/2M
ratios > 1), Holm-corrected across every size tested, stays below alpha AND the median ratio
reaches 1 + min_effect. Without a helped size the verdict is "no evidence that 2 MiB pages help";
it never names a cause the scan did not observe: the iTLB and the L1i are named only with their
per-dispatch miss counts, where the PMU has them.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from perflab.kernels.frontend.facts import nearest_reference
from perflab.model.units import fmt_bytes
from perflab.stats import knee

if TYPE_CHECKING:  # the study module imports this one
    from perflab.studies.frontend.study import FrontendConfig


def _point(result: Any, cpu: Any, mode: str, b: int) -> Any:
    return next((p for p in result.points if p.cpu == cpu and p.mode == mode and p.bytes == b), None)


def _counts(result: Any, cpu: Any, b: int) -> str | None:
    """'iTLB 0.012 -> 0.0003, L1i 0.41 -> 0.40 misses per dispatch (4K -> 2M)' where counted."""
    p4, p2 = _point(result, cpu, "4k", b), _point(result, cpu, "2m", b)
    parts = []
    for name, attr in (("iTLB", "itlb_per_dispatch"), ("L1i", "l1i_per_dispatch")):
        a, h = getattr(p4, attr, None), getattr(p2, attr, None)
        if a is not None and h is not None:
            parts.append(f"{name} {a:.3g} -> {h:.3g}")
    return ", ".join(parts) + " misses per dispatch (4K -> 2M pages)" if parts else None


def verdict(config: FrontendConfig, result: Any) -> tuple[str, list[str]]:
    """(one-line verdict, lines of evidence and of what it does not show)."""
    ratios = result.ratios
    m = len(ratios)
    method = (f"one-sided Wilcoxon signed-rank test per size on the per-round 4K/2M time ratios, "
              f"Holm-corrected across {m} sizes, alpha {config.alpha:g}, minimum effect "
              f"{config.min_effect:.0%}")
    measured = [p for p in result.points if p.median_ns is not None]
    if result.points and not measured:
        why = "; ".join(f"{k} ({v})" for k, v in result.failures.items())
        return f"the scan failed: every run failed: {why}", []
    if not ratios:
        if "2m" not in config.modes or "4k" not in config.modes:
            return (f"only {'4 KiB' if '4k' in config.modes else '2 MiB'} text pages were asked for "
                    "(--modes): no comparison, no verdict on 2 MiB pages"), []
        why = result.huge_reason.removeprefix("2 MiB text pages: ") or "fewer than 2 paired rounds per size"
        return (f"no verdict on 2 MiB text pages: {why}",
                ["without 2 MiB runs the scan cannot separate the iTLB from the caches"])
    evidence = [f"test: {method}"]
    helped = [r for r in ratios if r.helps]
    counted = any(p.itlb_per_dispatch is not None for p in result.points)
    if helped:
        best = max(helped, key=lambda r: r.ratio)
        cpus = sorted({r.cpu for r in helped if r.cpu is not None})
        where = f" on CPU {', '.join(map(str, cpus))}" if cpus else ""
        what = "(CPU, size) pairs" if any(r.cpu is not None for r in ratios) else "sizes"
        text = (f"2 MiB text pages run faster{where} at {len(helped)} of {m} {what} (from "
                f"{fmt_bytes(min(r.bytes for r in helped))}; up to {(best.ratio - 1) * 100:.1f} % at "
                f"{fmt_bytes(best.bytes)}, {best.ci.label()} {(best.ci.low - 1) * 100:.1f}.."
                f"{(best.ci.high - 1) * 100:.1f} %)")
        top = max(helped, key=lambda r: r.bytes)
        counts = _counts(result, top.cpu, top.bytes)
        if counts:
            p4, p2 = _point(result, top.cpu, "4k", top.bytes), _point(result, top.cpu, "2m", top.bytes)
            # a fall worth naming: halved, and by at least one miss per 1000 dispatches
            fell = p4.itlb_per_dispatch > max(2 * p2.itlb_per_dispatch, p2.itlb_per_dispatch + 1e-3)
            text += (f"; at {fmt_bytes(top.bytes)} {counts}: " + ("fewer iTLB misses go with the gain" if fell else
                     "the iTLB misses do not fall, so the counters do not explain the gain"))
        else:
            text += "; consistent with iTLB misses, not observed (no iTLB counts here)"
        evidence.append("does not show: that the same gain holds for other code layouts or machines")
    else:
        text = f"no evidence that 2 MiB text pages help at any of {m} sizes"
        if counted:
            b = max(p.bytes for p in result.points if p.itlb_per_dispatch is not None)
            counts = _counts(result, None if not result.points else result.points[-1].cpu, b)
            text += f"; at {fmt_bytes(b)}: {counts}" if counts else ""
        else:
            text += ("; without iTLB or L1i counts the cause of any slowdown with code size (L1i, L2, "
                     "iTLB) is not identified")
        evidence.append("does not show: that 2 MiB pages cannot help; an effect below "
                        f"{config.min_effect:.0%} or hidden by this machine's noise passes unseen")
    if not counted:
        evidence.append(result.counters_reason or "no iTLB or L1i counts were asked for (--no-counters)")
    evidence.append("the knee describes the curve; it is not a test of its cause")
    return text, evidence


def knee_fit(pts: list, refs: dict[str, int], value: Any = None) -> tuple | None:
    """(knee bytes, slope before, slope after, BIC gain, nearby references) of one curve, or None.

    ``value``: what the curve plots per point (default its median ns per dispatch; under
    --instrument cachegrind its simulated I1 misses per dispatch)."""
    value = value or (lambda p: p.median_ns)
    k = find_knee([p.bytes for p in pts], [value(p) for p in pts]) if len(pts) >= 3 else None
    if k is None:
        return None
    return (*k, nearest_reference(k[0], refs))


def find_knee(sizes: list[int], ns: list[float]) -> tuple[int, float, float, float] | None:
    """Knee of runtime (or a count) against log2(code size) via stats.knee: (bytes, slopes, BIC gain).

    The x axis is log2(bytes) because the scan is geometric: on a linear axis most points would
    crowd the left end and the largest sizes alone would decide the fit.
    """
    k = knee([math.log2(s) for s in sizes], list(ns))
    if k is None:
        return None
    return round(2 ** k.x), k.slope_before, k.slope_after, k.score


def design_notes(config: FrontendConfig, result: Any) -> list[str]:
    """Say where the design cannot give what the user may expect from it."""
    notes = []
    levels = [p.ci.level for p in result.points if p.ci is not None and p.reps > 1]
    if levels and min(levels) < 0.90:
        notes.append(f"with {config.reps} rounds a median's interval reaches only {min(levels):.0%} "
                     "confidence: use --reps 5 or more for 90 %")
    m = len(result.ratios)
    if m:
        widths = sorted((r.ci.high - r.ci.low) / 2 for r in result.ratios)
        half = widths[len(widths) // 2]
        if half > config.min_effect:
            notes.append(f"noise: the 4K/2M intervals reach +-{half:.0%} around the median ratio at a "
                         f"typical size, wider than the {config.min_effect:.0%} minimum effect: a gain "
                         "that small cannot be told from this machine's noise (more --reps, a quieter machine)")
        need = math.ceil(math.log2(m / config.alpha))
        if min(r.pairs for r in result.ratios) < need:
            notes.append(f"with fewer than {need} paired rounds no size can pass Holm's correction "
                         f"over {m} sizes (smallest p = 2^-rounds): use --reps {need} or more")
    return notes
