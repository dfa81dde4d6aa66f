"""`perflab compare A B --html PATH`: one self-contained page of B/A ratios with their CIs.

Answer first (the verdict), then per measure a plot of B/A ratios on a log axis centred on 1
(significant ones filled, so the page reads in grey too), then the table; machines last.
"""

from __future__ import annotations

from typing import Any, Sequence

from perflab.report.plots import _figure, _svg, accessible
from perflab.studies.compare.study import CompareResult, CompareRow
from perflab.studies.compare.keys import measure_title


def ratio_plot(rows: Sequence[CompareRow], title: str) -> str:
    """Forest plot: each row's B/A with its CI on a log axis centred on 1; inline SVG."""
    import math

    plt, fig, ax = _figure(6.8, max(1.6, 0.32 * len(rows) + 1.0))
    ys = list(range(len(rows)))[::-1]
    for y, r in zip(ys, rows):
        lo, hi = max(r.lo, 1e-12), max(r.hi, 1e-12)
        ax.plot([lo, hi], [y, y], color="black", lw=1.2)
        if r.significant:
            ax.plot([r.ratio], [y], marker="s", ms=6, color="#b03a2e", mec="black", ls="none")
        else:
            ax.plot([r.ratio], [y], marker="o", ms=6, mfc="white", mec="black", ls="none")
    ax.axvline(1.0, color="grey", ls="--", lw=1)
    ax.set_xscale("log")
    span = max([abs(math.log(max(v, 1e-12))) for r in rows for v in (r.lo, r.hi, r.ratio)] + [0.005])
    ax.set_xlim(math.exp(-1.15 * span), math.exp(1.15 * span))  # symmetric about 1
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    # Five ticks evenly spaced in log space, 1 in the middle: readable at any zoom.
    ticks = [math.exp(span * k / 2) for k in range(-2, 3)]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.4g}"))
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_yticks(ys, [r.key for r in rows])
    ax.set_xlabel(f"B/A (Hodges-Lehmann), {title}, CI at its level (log axis; square: significant, circle: not)")
    return _svg(plt, fig)


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
{% include "style.css" %}
</style></head><body>
<h1>{{ title }}</h1>
<p class="verdict">{{ result.verdict }}</p>
{% for n in result.notes %}<p class="note">note: {{ n }}</p>{% endfor %}
<div class="scroll"><table><tr><th>measure</th><th class="num">comparisons</th><th class="num">significant</th><th class="num">B better</th><th class="num">A better</th></tr>
{% for m, rs in groups %}<tr><td><a href="#{{ loop.index }}">{{ m }}</a></td><td class="num">{{ rs|length }}</td>
<td class="num">{{ rs|selectattr('significant')|list|length }}</td>
<td class="num">{{ rs|selectattr('better', 'equalto', 'B')|list|length }}</td>
<td class="num">{{ rs|selectattr('better', 'equalto', 'A')|list|length }}</td></tr>{% endfor %}
</table></div>
{% for m, rs in groups %}
<h2 id="{{ loop.index }}">{{ m }}</h2>
<div class="plot">{{ plots[loop.index0]|safe }}</div>
<div class="scroll"><table><tr><th>point</th><th class="num">n A</th><th class="num">n B</th><th class="num">median A</th><th class="num">median B</th>
<th class="num">B/A</th><th class="num">CI (level)</th><th class="num">p (Holm)</th><th>verdict</th></tr>
{% for r in rs %}<tr{% if r.significant %} class="sig"{% endif %}><td>{{ r.key }}</td><td class="num">{{ r.n_a }}</td><td class="num">{{ r.n_b }}</td>
<td class="num">{{ r.median_a|num }}</td><td class="num">{{ r.median_b|num }}</td>
<td class="num">{{ '%.4f'|format(r.ratio) }}</td><td class="num">[{{ '%.4f'|format(r.lo) }}, {{ '%.4f'|format(r.hi) }}] ({{ 'exact' if r.level == 1.0 else '%.0f%%'|format(100 * r.level) }})</td>
<td class="num">{{ '%.2g'|format(r.p_adjusted) }}</td>
<td>{{ r.verdict_cell }}{% if r.bimodal %} ({{ r.modes_text() }}){% endif %}</td></tr>{% endfor %}
</table></div>
{% endfor %}
{% if result.unmatched_a or result.unmatched_b %}<h2>Unmatched points</h2>
<p>Only in A: {{ result.unmatched_a|join(', ') or 'none' }}. Only in B: {{ result.unmatched_b|join(', ') or 'none' }}.</p>{% endif %}
<h2>Campaigns</h2>
<div class="scroll"><table><tr><th></th><th>campaign</th><th>study</th><th>started</th><th>machine</th></tr>
{% for side, c, h in sides %}<tr><td>{{ side }}</td><td class="num">{{ c.id }}</td><td>{{ c.study }}</td><td>{{ c.started }}</td><td>{{ h }}</td></tr>{% endfor %}
</table></div>
<p class="note">B/A is the Hodges-Lehmann ratio (the median of the pairwise ratios b/a) with
Moses' interval at the level it really has (printed per row; fewer runs reach less); p is a
two-sided Mann-Whitney test, Holm-corrected over every comparison on this page{% if families %}, in
two families (all points: van Elteren's stratified test; each point) at alpha/2 = {{ result.alpha / 2 }}
each{% endif %}. A comparison is significant when the adjusted p is below {{ threshold }} and the CI
lies wholly outside 1 &plusmn; {{ '%g'|format(100 * result.min_effect) }} % (--min-effect). "Better"
reads times and memory as lower-is-better and the primary metric in the direction the workload
declares; other metrics have no declared direction ("B higher", "B lower").</p>
</body></html>
"""


def _num(v: float) -> str:
    """4 significant digits; large values in full with thousands separators."""
    return f"{v:,.0f}" if abs(v) >= 1e4 else f"{v:.4g}"


def compare_html(result: CompareResult, campaigns: Sequence[Any], hosts: Sequence[str]) -> str:
    """The page's HTML text; campaigns and hosts are (A, B)."""
    import jinja2

    groups: dict[str, list[CompareRow]] = {}
    for r in result.rows:
        groups.setdefault(measure_title(r.measure), []).append(r)
    items = list(groups.items())  # rows come in measure order: wall, CPU, memory, energy, metrics
    plots = [accessible(ratio_plot(rs, m), f"B/A of {m}",
                        f"{sum(r.significant for r in rs)} of {len(rs)} comparisons of {m} differ "
                        "significantly; ratios on a log axis centred on 1", f"cmp-plot{i}")
             for i, (m, rs) in enumerate(items)]
    title = (f"perflab compare: campaign {result.a} (A) vs {result.b} (B), {result.study_b} study, "
             f"{hosts[1]}")
    # The report's own loader: the page includes the report's one stylesheet (templates/style.css).
    env = jinja2.Environment(loader=jinja2.PackageLoader("perflab.report", "templates"), autoescape=True)
    env.filters["num"] = _num
    families = any(r.overall for r in result.rows)
    return env.from_string(_PAGE).render(
        title=title, result=result, groups=items, plots=plots, families=families,
        threshold=f"{result.alpha / 2:g}" if families else f"{result.alpha:g}",
        sides=[("A", campaigns[0], hosts[0]), ("B", campaigns[1], hosts[1])])
