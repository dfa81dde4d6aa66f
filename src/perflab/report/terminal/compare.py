"""How a compare result looks in a terminal: the table of B/A per point and measure (rich, or
Markdown with --format markdown), the verdict and the lines that say how it was judged."""

from __future__ import annotations

import sys
from typing import Any

from perflab.platform.tune.state import DIFFERS
from perflab.report.model import Table
from perflab.report.render import format_cell, table_to_markdown
from perflab.studies.compare.keys import measure_title
from perflab.studies.compare.result import CompareResult, CompareRow


def table(result: CompareResult) -> Table:
    """The rows of B/A; each interval carries the level it really has (67 % at 2 runs a side)."""
    return Table(
        f"{_side(result.campaigns_a)} ({result.study_a}) vs {_side(result.campaigns_b)} ({result.study_b})",
        ["point", "measure", "n A", "n B", "median A", "median B", "B/A", "CI of B/A (level)",
         "p (Holm)", "verdict"],
        [[r.key, measure_title(r.measure), r.n_a, r.n_b, *_medians(r), f"{r.ratio:.4f}",
          r.ci_text, f"{r.p_adjusted:.3g}", r.verdict_cell]
         for r in result.rows],
    )


def lines(result: CompareResult) -> list[str]:
    """The verdict, how significance was judged, two-speed rows, notes and unmatched points."""
    out = [f"verdict: {result.verdict}",
           f"significant: Holm-adjusted p below alpha {result.alpha:g} ({_families(result)}) "
           f"and the CI of B/A wholly outside 1 +- {100 * result.min_effect:g} % (--min-effect)"]
    out += [f"two speeds: {measure_title(r.measure)} of {r.key}: {r.modes_text()}"
            for r in result.rows if r.bimodal]
    out += [f"{'warning' if n.startswith(DIFFERS) else 'note'}: {n}" for n in result.notes]
    if result.unmatched_a or result.unmatched_b:
        out.append(f"unmatched: {len(result.unmatched_a)} only in A, {len(result.unmatched_b)} only in B")
    return out


def render(result: CompareResult, console: Any, fmt: str = "table") -> None:
    """The table ('table': rich; 'markdown': a GFM table on stdout, as a merge request shows it),
    then the lines."""
    t = table(result)
    if fmt == "markdown":
        # Written as is, not through rich: a Markdown table must not be wrapped to the console's width.
        sys.stdout.write(table_to_markdown(t) + "\n")
        sys.stdout.flush()
    else:
        from rich.markup import escape
        from rich.table import Table as RTable

        rt = RTable(title=escape(t.title))
        for c in t.columns:
            rt.add_column(c, justify="left" if c in ("point", "measure", "verdict") else "right")
        for row in t.rows:
            rt.add_row(*[escape(format_cell(c)) for c in row])
        console.print(rt)
    for line in lines(result):
        console.print(line, markup=False, highlight=False)


def _side(ids: Any) -> str:
    return f"campaign {ids[0]}" if len(ids) == 1 else "campaigns " + ",".join(map(str, ids))


def _medians(r: CompareRow) -> list:
    """A and B's medians; whole counts in full (1.7e+06 against 1.71e+06 would hide 0.5 %)."""
    if r.counted and min(r.median_a, r.median_b) >= 1000:
        return [f"{r.median_a:,.0f}", f"{r.median_b:,.0f}"]
    return [r.median_a, r.median_b]


def _families(result: CompareResult) -> str:
    """How the alpha was split: 'alpha/2 = 0.025 in each of two families' or 'one family'."""
    if any(r.overall for r in result.rows):
        return f"alpha/2 = {result.alpha / 2:g} in each of two families: all points, each point"
    return "one family"
