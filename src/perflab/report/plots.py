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
    fig.savefig(buf, format="svg", metadata={"Date": None})
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


# Colours that stay apart in grey (a dark blue and a light orange differ in lightness), and a
# second cue for every highlight: marker shape or hatching, never colour alone.
NORMAL, HIGHLIGHT = "#2166ac", "#e08214"


def bars_with_ci(
    labels: Sequence[str], values: Sequence[float], lo: Sequence[float | None] | None = None,
    hi: Sequence[float | None] | None = None, ylabel: str = "", highlight: Sequence[bool] | None = None,
    baseline: float | None = None, zero: bool = False,
) -> str:
    """Medians as points with their CI bars (the axis need not start at zero, so no bars that
    would exaggerate); with ``zero=True`` bars from zero on an axis that includes it.
    Highlighted values (slow CPUs, significant variants) are orange squares or hatched bars."""
    plt, fig, ax = _figure(max(4.0, min(12.0, 0.45 * len(labels) + 2)), 3.4)
    x = list(range(len(labels)))
    hl = [bool(highlight and highlight[i]) for i in x]
    if zero:
        ax.bar(x, values, color=[HIGHLIGHT if h else NORMAL for h in hl],
               edgecolor="black", linewidth=0.5)
        for i, h in enumerate(hl):
            if h:
                ax.patches[i].set_hatch("//")
        # matplotlib's autoscaling keeps 0 on the axis of a bar chart
    if lo is not None and hi is not None:
        err_lo = [max(0.0, v - (l if l is not None else v)) for v, l in zip(values, lo)]
        err_hi = [max(0.0, (h if h is not None else v) - v) for v, h in zip(values, hi)]
        ax.errorbar(x, values, yerr=[err_lo, err_hi], fmt="none", ecolor="black", capsize=3, lw=1)
    if not zero:
        for flag, marker, colour in ((False, "o", NORMAL), (True, "s", HIGHLIGHT)):
            xs = [i for i in x if hl[i] == flag]
            if xs:
                ax.plot(xs, [values[i] for i in xs], marker, color=colour, ms=6, mec="black", mew=0.5,
                        label="flagged" if flag else None)
    if baseline is not None:
        ax.axhline(baseline, color="grey", ls="--", lw=1)
    ax.set_xticks(x, labels, rotation=45 if len(labels) > 8 else 0, ha="right" if len(labels) > 8 else "center")
    ax.set_ylabel(ylabel)
    if any(hl) and not zero:
        ax.legend(fontsize=7)
    return _svg(plt, fig)


def ratios_log(labels: Sequence[str], ratios: Sequence[float], lo: Sequence[float], hi: Sequence[float],
               significant: Sequence[bool], xlabel: str = "ratio to the baseline (log scale)") -> str:
    """Ratios with their CIs on a log axis centred on 1 (a halving looks as large as a doubling);
    significant ones as filled squares, the rest as open circles."""
    import math

    plt, fig, ax = _figure(6.4, max(2.0, 0.35 * len(labels) + 1))
    y = list(range(len(labels)))
    ax.errorbar(ratios, y, xerr=[[max(0.0, r - l) for r, l in zip(ratios, lo)],
                                 [max(0.0, h - r) for r, h in zip(ratios, hi)]],
                fmt="none", ecolor="black", capsize=3, lw=1)
    for flag, marker, face in ((True, "s", HIGHLIGHT), (False, "o", "white")):
        ys = [i for i in y if bool(significant[i]) == flag]
        if ys:
            ax.plot([ratios[i] for i in ys], ys, marker, mfc=face, mec="black", ms=6,
                    label="significant" if flag else "not significant")
    ax.axvline(1.0, color="grey", lw=1)
    ax.set_xscale("log")
    span = max([abs(math.log(v)) for v in (*lo, *hi) if v and v > 0] or [0.01]) * 1.15
    ax.set_xlim(math.exp(-span), math.exp(span))
    ax.set_yticks(y, labels)
    ax.set_xlabel(xlabel)
    ax.legend(fontsize=7)
    return _svg(plt, fig)


def lines(
    series: dict[str, tuple[Sequence[float], Sequence[float]]], xlabel: str, ylabel: str,
    logx: bool = False, vlines: dict[str, float] | None = None, hline: tuple[str, float] | None = None,
    markers: bool = True,
) -> str:
    """One line per series {name: (xs, ys)}; vertical markers (knee, iTLB reach) and a limit line."""
    plt, fig, ax = _figure()
    for k, (name, (xs, ys)) in enumerate(series.items()):
        # distinct markers and line styles: the series stay apart in grey
        ax.plot(list(xs), list(ys), marker="osD^v"[k % 5] if markers else None, ms=4,
                ls=["-", "--", "-.", ":"][k % 4], label=name)
    if logx:
        ax.set_xscale("log", base=2)
    for i, (name, xv) in enumerate((vlines or {}).items()):
        ax.axvline(xv, color="black", ls=["--", ":", "-.", (0, (5, 1))][i % 4], lw=1, label=name)
    if hline:
        ax.axhline(hline[1], color="black", ls=":", lw=1, label=hline[0])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if len(series) > 1 or vlines or hline:
        ax.legend(fontsize=7)
    return _svg(plt, fig)


def scatter_labeled(
    points: Sequence[tuple[str, float, float, bool]], xlabel: str, ylabel: str,
    xlimit: tuple[str, float] | None = None,
) -> str:
    """Labelled points (name, x, y, good); an optional vertical limit such as a power envelope."""
    plt, fig, ax = _figure()
    for name, xv, yv, good in points:
        ax.scatter([xv], [yv], color=NORMAL if good else HIGHLIGHT, marker="o" if good else "X", s=30)
        ax.annotate(name, (xv, yv), textcoords="offset points", xytext=(4, 4), fontsize=7)
    if xlimit:
        ax.axvline(xlimit[1], color="black", ls="--", lw=1, label=xlimit[0])
        ax.legend(fontsize=7)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return _svg(plt, fig)
