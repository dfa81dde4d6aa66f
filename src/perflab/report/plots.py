"""Plots the seeds drew, as inline SVG strings (matplotlib, imported lazily, Agg backend).

SVG text is rendered as paths (svg.fonttype='path'), so the report needs no font and no network.
"""

from __future__ import annotations

import io
from typing import Sequence


def _figure(width: float = 6.4, height: float = 3.4):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.fonttype": "path", "font.size": 9, "axes.grid": True,
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


def bars_with_ci(
    labels: Sequence[str], values: Sequence[float], lo: Sequence[float | None] | None = None,
    hi: Sequence[float | None] | None = None, ylabel: str = "", highlight: Sequence[bool] | None = None,
    baseline: float | None = None,
) -> str:
    """Bars with asymmetric CI whiskers; highlighted bars (slow CPUs, flagged variants) in red."""
    plt, fig, ax = _figure(max(4.0, min(12.0, 0.45 * len(labels) + 2)), 3.4)
    x = list(range(len(labels)))
    colors = ["#c0392b" if (highlight and highlight[i]) else "#2e86c1" for i in x]
    ax.bar(x, values, color=colors)
    if lo is not None and hi is not None:
        err_lo = [max(0.0, v - (l if l is not None else v)) for v, l in zip(values, lo)]
        err_hi = [max(0.0, (h if h is not None else v) - v) for v, h in zip(values, hi)]
        ax.errorbar(x, values, yerr=[err_lo, err_hi], fmt="none", ecolor="black", capsize=3, lw=1)
    if baseline is not None:
        ax.axhline(baseline, color="grey", ls="--", lw=1)
    ax.set_xticks(x, labels, rotation=45 if len(labels) > 8 else 0, ha="right" if len(labels) > 8 else "center")
    ax.set_ylabel(ylabel)
    finite = [v for v in values if v == v]
    if finite and min(finite) > 0:
        top = max((h if h is not None else v) for v, h in zip(values, hi or values))
        bottom = min((l if l is not None else v) for v, l in zip(values, lo or values))
        span = top - bottom
        if bottom > 0 and span < 0.3 * top:  # zoom in so a 2 % difference is visible
            ax.set_ylim(max(0.0, bottom - span * 0.6 - 1e-12), top + span * 0.3 + 1e-12)
    return _svg(plt, fig)


def lines(
    series: dict[str, tuple[Sequence[float], Sequence[float]]], xlabel: str, ylabel: str,
    logx: bool = False, vlines: dict[str, float] | None = None, hline: tuple[str, float] | None = None,
    markers: bool = True,
) -> str:
    """One line per series {name: (xs, ys)}; vertical markers (knee, iTLB reach) and a limit line."""
    plt, fig, ax = _figure()
    for name, (xs, ys) in series.items():
        ax.plot(list(xs), list(ys), marker="o" if markers else None, ms=3, label=name)
    if logx:
        ax.set_xscale("log", base=2)
    for i, (name, xv) in enumerate((vlines or {}).items()):
        ax.axvline(xv, color=["#c0392b", "#7d3c98", "#117a65", "#b9770e"][i % 4], ls="--", lw=1, label=name)
    if hline:
        ax.axhline(hline[1], color="#c0392b", ls=":", lw=1, label=hline[0])
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
        ax.scatter([xv], [yv], color="#1e8449" if good else "#c0392b", s=30)
        ax.annotate(name, (xv, yv), textcoords="offset points", xytext=(4, 4), fontsize=7)
    if xlimit:
        ax.axvline(xlimit[1], color="#c0392b", ls="--", lw=1, label=xlimit[0])
        ax.legend(fontsize=7)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    return _svg(plt, fig)
