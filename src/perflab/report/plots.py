"""Plots the seeds drew, as inline SVG strings (matplotlib, imported lazily, Agg backend).

SVG text stays text (svg.fonttype='none') in a common sans-serif font stack, so a plot's labels
can be searched, copied and read aloud, and the file is a fraction of what glyph paths made it
(90 % of the report's bytes were glyphs). Every figure is an image with a title and a
description in words (``accessible``), for screen readers and for search.
"""

from __future__ import annotations

import html
import io
import re
from typing import Sequence

# Fonts a browser has nearly everywhere; DejaVu Sans is what matplotlib measured the text with.
FONT_STACK = ["DejaVu Sans", "Arial", "Helvetica", "Liberation Sans", "sans-serif"]


def _figure(width: float = 6.4, height: float = 3.4):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.fonttype": "none", "font.family": "sans-serif",
                         "font.sans-serif": FONT_STACK, "font.size": 9, "axes.grid": True,
                         "grid.alpha": 0.3, "svg.hashsalt": "perflab"})
    fig, ax = plt.subplots(figsize=(width, height))
    return plt, fig, ax


def _svg(plt, fig) -> str:
    buf = io.StringIO()
    fig.tight_layout()
    # metadata Date=None keeps the SVG byte-identical for identical data.
    fig.savefig(buf, format="svg", metadata={"Date": None}, bbox_inches="tight")  # legends beside the axes
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


_SVG_OPEN = re.compile(r"<svg\b[^>]*>")
_A11Y = re.compile(r'\s(?:role|aria-labelledby)="[^"]*"|<title id="[^"]*">.*?</title>|<desc id="[^"]*">.*?</desc>',
                   re.S)


def accessible(svg: str, title: str, desc: str, ident: str) -> str:
    """The SVG as an image with a <title> and a <desc> (the finding in words), ARIA-labelled.

    Idempotent: a second call replaces what the first put in (a report rendered twice).
    """
    svg = _A11Y.sub("", svg)
    m = _SVG_OPEN.search(svg)
    if not m:
        return svg
    head = m.group(0)[:-1].rstrip("/") + f' role="img" aria-labelledby="{ident}-t {ident}-d">'
    inner = (f'<title id="{ident}-t">{html.escape(title)}</title>'
             f'<desc id="{ident}-d">{html.escape(desc)}</desc>')
    return svg[:m.start()] + head + inner + svg[m.end():]


# One meaning per colour in the whole report, each with its own marker too (never colour alone;
# blue and orange differ in lightness, so they stay apart in grey): a significant improvement,
# a significant worsening, a difference no test could show, and a plain estimate (no test made).
BETTER, WORSE, NOT_SIGNIFICANT, ESTIMATE = "better", "worse", "not significant", "estimate"
STYLE = {BETTER: ("#2166ac", "o", "#2166ac"), WORSE: ("#e08214", "s", "#e08214"),
         NOT_SIGNIFICANT: ("#7f7f7f", "o", "white"), ESTIMATE: ("#1b2631", "D", "#1b2631")}
LEGEND = {BETTER: "better (significant)", WORSE: "worse (significant)",
          NOT_SIGNIFICANT: "not significant", ESTIMATE: "median"}
NORMAL, HIGHLIGHT = STYLE[BETTER][0], STYLE[WORSE][0]
LEGEND_SIZE = 9


def _marks(ax, xs: Sequence[float], ys: Sequence[float], status: Sequence[str]) -> None:
    """One marker per point in its status's style; each is an SVG group 'mark-<status>-<i>' so a
    test (or a reader of the source) can count what the plot claims; one legend entry per status."""
    seen: set[str] = set()
    for i, (x, y, st) in enumerate(zip(xs, ys, status)):
        colour, marker, face = STYLE[st]
        (line,) = ax.plot([x], [y], marker, color=colour, mfc=face, mec=colour if st != ESTIMATE else "black",
                          ms=7, mew=1.2, ls="none", label=None if st in seen else LEGEND[st], zorder=3)
        line.set_gid(f"mark-{st.replace(' ', '-')}-{i}")
        seen.add(st)


def _legend(ax, **kw) -> None:
    """The legend, beside the axes where it has many entries (it would hide points inside)."""
    handles = ax.get_legend_handles_labels()[0]
    if not handles:
        return
    if len(handles) > 3 and not kw:
        kw = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "borderaxespad": 0.0}
    ax.legend(fontsize=LEGEND_SIZE, **kw)


def estimates(labels: Sequence[str], values: Sequence[float], lo: Sequence[float | None],
              hi: Sequence[float | None], ylabel: str, level: str, status: Sequence[str] | None = None,
              zero: bool = False) -> str:
    """Medians as points with their CI bars (labelled with the interval's level); the axis from
    zero where ``zero`` (throughput), else fitted to the intervals."""
    plt, fig, ax = _figure(max(4.0, min(12.0, 0.5 * len(labels) + 2)), 3.4)
    x = list(range(len(labels)))
    _errorbars(ax, x, values, lo, hi, level, vertical=True)
    _marks(ax, x, values, status or [ESTIMATE] * len(x))
    if zero:
        ax.set_ylim(bottom=0)
    rot = len(labels) > 6 or max((len(s) for s in labels), default=0) > 14
    ax.set_xticks(x, labels, rotation=30 if rot else 0, ha="right" if rot else "center")
    ax.set_ylabel(ylabel)
    _legend(ax)
    return _svg(plt, fig)


def _errorbars(ax, pos, values, lo, hi, level: str, vertical: bool) -> None:
    pts = [(p, v, l, h) for p, v, l, h in zip(pos, values, lo, hi) if l is not None and h is not None]
    if not pts:
        return
    err = [[max(0.0, v - l) for _, v, l, _ in pts], [max(0.0, h - v) for _, v, _, h in pts]]
    ps, vs = [p for p, *_ in pts], [v for _, v, *_ in pts]
    if vertical:
        ax.errorbar(ps, vs, yerr=err, fmt="none", ecolor="black", capsize=3, lw=1, label=level, zorder=2)
    else:
        ax.errorbar(vs, ps, xerr=err, fmt="none", ecolor="black", capsize=3, lw=1, label=level, zorder=2)


def ratio_axis(labels: Sequence[str], ratios: Sequence[float], lo: Sequence[float | None],
               hi: Sequence[float | None], status: Sequence[str], xlabel: str, level: str) -> str:
    """Ratios with their CIs on a log axis centred on 1 (a halving looks as large as a doubling),
    one marker style per finding, a line at 1 (no difference)."""
    import math

    plt, fig, ax = _figure(8.0, max(2.2, 0.34 * len(labels) + 1.3))
    y = list(range(len(labels)))[::-1]  # first label at the top, as in the table
    _errorbars(ax, y, ratios, lo, hi, level, vertical=False)
    _marks(ax, ratios, y, status)
    ax.axvline(1.0, color="grey", lw=1)
    ax.set_xscale("log")
    ends = [v for v in (*ratios, *lo, *hi) if v is not None and v > 0]
    span = max([abs(math.log(v)) for v in ends] or [0.01]) * 1.15 or 0.01
    ax.set_xlim(math.exp(-span), math.exp(span))
    _ratio_ticks(ax, span)
    ax.set_yticks(y, labels)
    ax.set_xlabel(xlabel)
    _legend(ax, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    return _svg(plt, fig)


def _ratio_ticks(ax, span: float) -> None:
    """Ticks a reader can name (0.5, 0.9, 1, 1.1, 2) rather than powers of ten, spread over the
    axis: the outermost first, none closer to another than a quarter of the half-width."""
    import math

    from matplotlib.ticker import FixedLocator, NullLocator

    cands = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 0.8, 0.9, 0.95, 0.98, 0.99]
    cands += [1 / c for c in cands]
    ticks = [1.0]
    for c in sorted(cands, key=lambda c: -abs(math.log(c))):
        if abs(math.log(c)) <= span and all(abs(math.log(c / t)) >= span / 4 for t in ticks):
            ticks.append(c)
    ticks.sort()
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([f"{c:.3g}" for c in ticks])


def lines(
    series: dict[str, tuple], xlabel: str, ylabel: str, logx: bool = False,
    vlines: dict[str, float] | None = None, hline: tuple[str, float] | None = None,
    level: str = "", zero: bool = False, integer_x: bool = False,
) -> str:
    """One line per series {name: (xs, ys[, lows, highs])} with CI bars where given; vertical
    markers (knee, cache sizes) each in its own style and label; the y axis from zero where
    ``zero`` (throughput); integer ticks only where ``integer_x`` (copies)."""
    plt, fig, ax = _figure(8.0 if len(series) + len(vlines or {}) > 3 else 6.4)
    barred, i = False, 0
    for k, (name, data) in enumerate(series.items()):
        xs, ys = list(data[0]), list(data[1])
        # distinct markers and line styles: the series stay apart in grey
        (line,) = ax.plot(xs, ys, ls=["-", "--", "-.", ":"][k % 4], marker="osD^v"[k % 5], ms=4, label=name)
        for x, y in zip(xs, ys):  # each point its own group: the estimates a test can count
            (pt,) = ax.plot([x], [y], marker="osD^v"[k % 5], ms=4, color=line.get_color(), ls="none")
            pt.set_gid(f"mark-{ESTIMATE}-{i}")
            i += 1
        if len(data) > 2:
            pts = [(x, y, lo, hi) for x, y, lo, hi in zip(xs, ys, data[2], data[3]) if lo is not None]
            if pts:
                ax.errorbar([p[0] for p in pts], [p[1] for p in pts],
                            yerr=[[max(0.0, y - lo) for _, y, lo, _ in pts], [max(0.0, hi - y) for _, y, _, hi in pts]],
                            fmt="none", ecolor=line.get_color(), capsize=3, lw=1,
                            label=None if barred else level)
                barred = True
    if logx:
        from matplotlib.ticker import FuncFormatter

        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))  # 16, not 2^4
    for i, (name, xv) in enumerate((vlines or {}).items()):
        ax.axvline(xv, color=["black", "#7f7f7f", "#e08214", "#2166ac", "#1b7837"][i % 5],
                   ls=["--", ":", "-.", (0, (5, 1)), (0, (1, 3))][i % 5], lw=1.2, label=name)
    if hline:
        ax.axhline(hline[1], color="black", ls=":", lw=1, label=hline[0])
    if zero:
        ax.set_ylim(bottom=0)
    if integer_x:
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if len(series) > 1 or vlines or hline or barred:
        _legend(ax)
    return _svg(plt, fig)


def scatter_labeled(
    points: Sequence[tuple[str, float, float, bool]], xlabel: str, ylabel: str,
    xlimit: tuple[str, float] | None = None,
) -> str:
    """Labelled points (name, x, y, good); an optional vertical limit such as a power envelope."""
    plt, fig, ax = _figure()
    for name, xv, yv, good in points:
        ax.scatter([xv], [yv], color=NORMAL if good else HIGHLIGHT, marker="o" if good else "X", s=30)
        ax.annotate(name, (xv, yv), textcoords="offset points", xytext=(4, 4), fontsize=LEGEND_SIZE)
    if xlimit:
        ax.axvline(xlimit[1], color="black", ls="--", lw=1, label=xlimit[0])
        _legend(ax)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return _svg(plt, fig)
