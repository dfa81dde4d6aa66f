"""How the report writes numbers and counts, the same in HTML and Markdown: 3 significant digits
for measured values, intervals with as many digits as it takes to tell their ends apart, and
plurals that agree with their count."""

from __future__ import annotations

import math
from typing import Any


def format_cell(value: object) -> str:
    """The same rounding everywhere: 3 significant digits for measured (float) values, integers
    in full with thousands separators; None and NaN as an em dash."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "—"
        a = abs(value)
        if a == 0:
            return "0"
        if a >= 1e6 or a < 1e-3:
            return f"{value:.3g}"
        if a >= 1000:
            return f"{float(f'{value:.3g}'):,.0f}"
        return f"{value:.3g}"
    return str(value)


def sig(values: list[float], digits: int = 3) -> list[str]:
    """The values at `digits` significant digits, more (up to 6) until distinct values print
    distinctly: a ratio CI of 0.9996..1.0004 must not read '[1, 1]'."""
    for d in range(digits, 7):
        # '#' keeps trailing zeros: 4.00 and 0.220 say how many digits the interval supports
        keep = len(set(values)) > 1 and all("e" not in f"{v:.{d}g}" for v in values)
        out = [f"{v:#.{d}g}".rstrip(".") if keep else f"{v:.{d}g}" for v in values]
        if len(set(out)) == len(set(values)):
            return out
    return out


def interval(low: float | None, high: float | None, level: float | None = None, unit: str = "",
             estimate: float | None = None) -> str:
    """'[0.163, 0.376] s (98% CI)'; '—' where there is no interval, 'no CI' at level 0."""
    if low is None or high is None:
        return "—"
    if level is not None and level <= 0:
        return "no CI (too few runs)"
    vals = [low, high] + ([estimate] if estimate is not None else [])
    lo, hi = sig(vals)[:2]
    text = f"[{lo}, {hi}]" + (f" {unit}" if unit else "")
    return text + (f" ({level:.0%} CI)" if level is not None else "")


def ci_of(d: dict | None, unit: str = "", estimate: float | None = None, level: bool = True) -> str:
    """interval() of a stored {"low", "high", "level"} dict."""
    if not d:
        return "—"
    return interval(d.get("low"), d.get("high"), d.get("level") if level else None, unit, estimate)


def ratio_figure(ratio: float, ci: dict | None) -> str:
    """A ratio with the digits its interval needs, and more where 3 would print a change as '1'."""
    vals = [ratio] + ([ci["low"], ci["high"]] if ci and ci.get("low") is not None else [])
    if ratio != 1 and f"{ratio:.3g}" == "1":
        vals.append(1.0)
    return sig(vals)[0]


def ratio_text(ratio: float, ci: dict | None) -> str:
    """'×0.203 [0.185, 0.220] (96% CI)': a ratio with its interval."""
    r = ratio_figure(ratio, ci)
    return f"×{r} {ci_of(ci, estimate=ratio)}" if ci else f"×{r}"


def plural(n: Any, word: str, many: str | None = None) -> str:
    """'1 round', '2 rounds', '1 copy', '3 copies'."""
    if n == 1:
        return f"{n} {word}"
    if many is None:
        many = word[:-1] + "ies" if word.endswith("y") and word[-2:-1] not in "aeiou" else word + "s"
    return f"{format_cell(n) if isinstance(n, int) else n} {many}"
