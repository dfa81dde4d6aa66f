"""How a variants result looks in a terminal: one table, a verdict line per variant, the verdict."""

from __future__ import annotations

from typing import Any

from perflab.report.terminal.energy import render_energy
from perflab.studies.variants.result import LABELS, Estimate, VariantOutcome, VariantsResult, pct


def _est(e: Estimate | None, scale: float = 1.0, fmt: str = "{:.4g}") -> str:
    if e is None:
        return "-"
    f = lambda x: fmt.format(x / scale)  # noqa: E731 - closes over the format and scale
    return f"{f(e.median)} [{f(e.ci.low)}, {f(e.ci.high)}]"


def _vs_base(o: VariantOutcome, primary: str) -> str:
    c = o.comparisons.get(primary)
    if c is None:
        return "-"
    star = "*" if c.significant else ""
    if c.sequential:  # --until-decided: the decision of the repeated interval, not a p
        word = {"larger": "", "smaller": "", "within": f" <{c.min_effect:.0%}"}.get(c.decision, " ?")
        return f"{pct(c.ratio)} [{pct(c.ci.low)}, {pct(c.ci.high)}] {star}{word}".rstrip()
    return f"{pct(c.ratio)} [{pct(c.ci.low)}, {pct(c.ci.high)}] {star}p={c.p:.2g}"


def _count(o: VariantOutcome, measure: str) -> str:
    """'1,704,544 (-0.5 %*)': the median count and its change against the baseline (* significant)."""
    if measure not in o.counts:
        return "-"
    c = o.count_comparisons.get(measure)
    return f"{o.counts[measure]:,.0f}" + (f" ({pct(c.ratio)}{'*' if c.significant else ''})" if c else "")


def _checksum(o: VariantOutcome, result: VariantsResult) -> str:
    if not result.checksum_metric or o.checksum is None:
        return "-"
    return "DIFFERS" if o.status == "different result" else "same"


def render(result: VariantsResult, console: Any) -> None:
    """The table of variants, each variant's verdict and notes, the study's verdict and its limits."""
    from rich.table import Table

    levels = {e.ci.level for o in result.variants for e in o.estimates.values()}
    level = f"{min(levels):.0%}" if levels else f"{result.level:.0%}"
    label = LABELS.get(result.primary, result.primary)
    test = (f"repeated CIs, * = a change of {result.min_effect:.0%} or more, <{result.min_effect:.0%} = "
            "ruled out, ? = cannot tell" if result.sequential is not None else f"* = Holm p < {result.alpha:g}")
    t = Table(title=f"variants vs baseline '{result.baseline}': medians [{level} CI]; {label} vs baseline "
                    f"paired by round, {test}")
    metric = result.primary not in LABELS
    counts = ["instructions", "estimated_cycles"] if result.instrument else []
    cols = ["variant", "status", "elapsed s", *([result.primary] if metric else []), "max RSS MiB", "text KiB",
            f"{label} vs base", *[m.replace("_", " ") for m in counts], "checksum"]
    for col in cols:
        t.add_column(col, justify="left" if col in ("variant", "status") else "right")
    for o in result.variants:
        sizes = o.build.sizes
        wall, rss = o.estimates.get("wall_s"), o.estimates.get("maxrss_kb")
        row = [o.name, o.status, "-" if wall is None else f"{wall.median:.3f}",
               *([_est(o.estimates.get(result.primary))] if metric else []),
               "-" if rss is None else f"{rss.median / 1024:.1f}",
               "-" if not sizes else f"{sizes['text'] / 1024:.0f}", _vs_base(o, result.primary),
               *[_count(o, m) for m in counts], _checksum(o, result)]
        t.add_row(*row)
    console.print(t)
    if result.instrument:
        console.print(f"counts: {result.instrument} simulated, cache model {result.cache_model}; "
                      "change against the baseline, * = Holm p < "
                      f"{result.alpha:g} (Welch's t on logs, exact where every run counts the same)",
                      soft_wrap=True, highlight=False, markup=False)
        for d in result.disagreements:
            console.print(f"disagree: {d}", soft_wrap=True, highlight=False, markup=False)
    render_energy([(o.name, o.energy) for o in result.variants], console)
    for o in result.variants:
        if o.status != "baseline":
            console.print(f"{o.name}: {o.verdict}", soft_wrap=True)
        for note in o.notes:
            console.print(f"{o.name}: note: {note}", soft_wrap=True)
    console.print(f"verdict: {result.verdict}", soft_wrap=True)
    console.print(f"what it does not show: {result.caveat}", soft_wrap=True)
