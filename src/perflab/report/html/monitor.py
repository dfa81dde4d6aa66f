"""The report's section for the machine beside a study: the monitor's time series plotted on the
runs' clock (each run a band, the idle phases shaded), the phase means and the energy lines.

The runs' start_ns/end_ns and the samples' t_ns are both CLOCK_MONOTONIC, so they share an axis
without any offset. ``rate`` is the seam for an event rate over time (a per-event series, where a
workload prints one): (t_ns, events/s) pairs on the same clock, drawn as a panel of its own.
"""

from __future__ import annotations

from typing import Any, Sequence

from perflab.report.model import Answer, Plot, Section, Table
from perflab.report.plots import _figure, _svg
from perflab.report.terminal.monitor import CHANNEL_NAMES, energy_line
from perflab.studies.monitor import MonitorResult, channel_watts

RUN_BAND = "#2166ac"
IDLE_BAND = "#7f7f7f"


def _samples(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r["phase"] != "sources"]


def merged_spans(spans: Sequence[tuple[float, float]], gap: float) -> list[tuple[float, float]]:
    """Runs as bands, those less than ``gap`` apart (half the sampling interval) joined: a lab's
    thousands of back-to-back runs would otherwise be thousands of shapes the samples cannot
    resolve."""
    out: list[tuple[float, float]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1] + gap:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def monitor_plot(rows: Sequence[dict[str, Any]], runs: Sequence[Any],
                 rate: Sequence[tuple[int, float]] | None = None) -> str:
    """Stacked panels over seconds since the first sample: CPU shares, frequency and load, power
    per channel where measured, the event rate where given; every run a band in each panel."""
    samples = _samples(rows)
    t0 = samples[0]["t_ns"]
    ts = [(r["t_ns"] - t0) / 1e9 for r in samples]
    vals = [r["sample"] for r in samples]
    channels = sorted({ch for s in vals for ch in channel_watts(s)})
    panels = ["share", "freq"] + (["power"] if channels else []) + (["rate"] if rate else [])
    plt, fig, _ = _figure(8.0, 2.0 * len(panels) + 0.6)
    fig.clf()
    axes = fig.subplots(len(panels), 1, sharex=True)
    axes = list(axes) if len(panels) > 1 else [axes]
    gap = (ts[-1] - ts[0]) / max(1, len(ts) - 1) / 2 if len(ts) > 1 else 0.0
    spans = merged_spans([((r.start_ns - t0) / 1e9, (r.end_ns - t0) / 1e9) for r in runs if r.end_ns > r.start_ns], gap)
    idle = [(ts[i], ts[i + 1]) for i in range(len(ts) - 1) if samples[i + 1]["phase"].startswith("idle")]
    for ax, panel in zip(axes, panels):
        for k, (a, b) in enumerate(spans):
            ax.axvspan(a, b, color=RUN_BAND, alpha=0.12, lw=0, label="a run" if k == 0 and panel == "share" else None)
        for k, (a, b) in enumerate(idle):
            ax.axvspan(a, b, color=IDLE_BAND, alpha=0.18, lw=0, label="idle phase" if k == 0 and panel == "share" else None)
        if panel == "share":
            for key, name, style in (("busy", "CPU busy", "-"), ("pressure_cpu", "CPU pressure (PSI)", "--"),
                                     ("steal", "steal", ":")):
                pts = [(t, 100 * s[key]) for t, s in zip(ts, vals) if isinstance(s.get(key), (int, float))]
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], ls=style, lw=1.2, label=name)
            ax.set_ylabel("% of CPU time")
            ax.set_ylim(-2, 102)
        elif panel == "freq":
            pts = [(t, sum(f.values()) / len(f)) for t, s in zip(ts, vals) if (f := s.get("freq_mhz"))]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], lw=1.2, label="mean MHz")
            ax.set_ylabel("MHz")
            twin = ax.twinx()
            pts = [(t, s["load1"]) for t, s in zip(ts, vals) if isinstance(s.get("load1"), (int, float))]
            if pts:
                twin.plot([p[0] for p in pts], [p[1] for p in pts], ls="--", color="#e08214", lw=1.2, label="load (1 min)")
            twin.set_ylabel("load")
            twin.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
        elif panel == "power":
            for k, ch in enumerate(channels):
                pts = [(t, w[ch]) for t, s in zip(ts, vals) if ch in (w := channel_watts(s))]
                ax.plot([p[0] for p in pts], [p[1] for p in pts], ls=["-", "--", "-."][k % 3], lw=1.2,
                        label=CHANNEL_NAMES.get(ch, ch))
            ax.set_ylabel("W")
        else:
            ax.plot([(t - t0) / 1e9 for t, _ in rate or ()], [v for _, v in rate or ()], lw=1.2, label="events/s")
            ax.set_ylabel("events/s")
        # above the panel, in a row: inside, it hid the samples (busy sits at the top on a loaded node)
        ax.legend(loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=5, fontsize=8, frameon=False)
    axes[-1].set_xlabel("seconds since the monitor's first sample")
    return _svg(plt, fig)


def monitor_section(campaign: Any, rows: Sequence[dict[str, Any]], runs: Sequence[Any], result: MonitorResult,
                    rate: Sequence[tuple[int, float]] | None = None) -> Section:
    """The section for one monitored campaign (``runs``: its runs and its child campaigns')."""
    total = sum(p.seconds for p in result.phases)
    have = f"{sum(p.samples for p in result.phases)} samples every {result.interval_s:g} s over {total:.0f} s"
    energy = "; ".join(energy_line(e) for e in result.energy) or "power not measured on this machine"
    sec = Section(key=f"monitor-{campaign.id}", title=f"Machine beside campaign {campaign.id} ({campaign.study})",
                  verdict=f"{have}; {energy}.", campaign_id=campaign.id)
    cols = ["phase", "samples", "seconds", "busy", "steal", "CPU pressure", "load", "memory [GiB]", "swap [GiB]",
            "mean MHz", "min MHz"]
    channels = sorted({ch for p in result.phases for ch in p.watts})
    rows_ = [[p.phase, p.samples, p.seconds, _pct(p.busy), _pct(p.steal), _pct(p.pressure_cpu), _r(p.load1),
              _r(p.mem_used_gib), _r(p.swap_used_gib), _r(p.freq_mhz, 0), _r(p.freq_mhz_min, 0),
              *(_r(p.watts.get(ch), 1) for ch in channels)] for p in result.phases]
    sec.tables.append(Table("Means per phase", cols + [f"{ch} [W]" for ch in channels], rows_))
    if result.energy:
        sec.tables.append(Table("Energy over the study phase", [
            "channel", "gross [J]", "per event gross [J]", "idle [W]", "idle interval [W]", "net [J]",
            "per event net [J]", "per event net interval [J]"], [
            [CHANNEL_NAMES.get(e.channel, e.channel), _r(e.gross_j, 1), _g(e.gross_j_per_event), _r(e.idle_w, 1),
             _pair(e.idle_w_ci), _r(e.net_j, 1), _g(e.net_j_per_event), _pair(e.net_j_per_event_ci)]
            for e in result.energy]))
    if _samples(rows):
        sec.plots.append(Plot(
            "The machine over the study", monitor_plot(rows, runs, rate),
            caption="Runs are blue bands (runs closer than half the sampling interval joined), the idle "
                    "phases grey; samples and runs share one clock.",
            desc=sec.verdict))
    if result.lacks:
        sec.notes.append("not here: " + "; ".join(result.lacks))
    sec.notes.extend(result.notes)
    return sec


def monitor_answer(campaign: Any, sec: Section, result: MonitorResult) -> Answer:
    """The summary row of a monitor section: the machine's state per phase, energy where measured."""
    study = next((p for p in result.phases if p.phase == "study"), None)
    state = ("" if study is None else f"study phase: CPUs {100 * (study.busy or 0):.0f}% busy, steal "
             f"{100 * (study.steal or 0):.1f}%, CPU pressure {100 * (study.pressure_cpu or 0):.0f}%")
    energy = "; ".join(energy_line(e) for e in result.energy)
    return Answer("What did the machine do beside the study?", sec.verdict, energy or state or "no samples",
                  [*(f"not here: {x}" for x in result.lacks), *result.notes], sec.key,
                  basis=f"{sum(p.samples for p in result.phases)} samples every {result.interval_s:g} s",
                  program=f"campaign {campaign.id} ({campaign.study})")


def _pct(x: float | None) -> str | None:
    return None if x is None else f"{100 * x:.1f}%"


def _r(x: float | None, digits: int = 2) -> float | None:
    return None if x is None else round(x, digits)


def _g(x: float | None) -> str | None:
    return None if x is None else f"{x:.4g}"


def _pair(p: tuple[float, float] | None) -> str | None:
    return None if p is None else f"{p[0]:.4g} to {p[1]:.4g}"
