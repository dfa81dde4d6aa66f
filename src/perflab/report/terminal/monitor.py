"""Terminal rendering of the machine monitor beside a study: the phases side by side, the
sources this machine lacks in one line, energy per event gross and net of idle power."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from perflab.studies.monitor import ChannelEnergy, MonitorResult

CHANNEL_NAMES = {"node": "node meter (IPMI)", "rapl": "RAPL (packages and DRAM)", "gpu": "GPUs (nvidia-smi)"}


def _f(x: float | None, fmt: str = ".3g", scale: float = 1.0, unit: str = "") -> str:
    return "-" if x is None else f"{x * scale:{fmt}}{unit}"


def _joules(j: float | None) -> str:
    if j is None:
        return "-"
    for unit, scale in (("kJ", 1e3), ("J", 1.0), ("mJ", 1e-3), ("uJ", 1e-6)):
        if abs(j) >= scale or unit == "uJ":
            return f"{j / scale:.3g} {unit}"
    return f"{j:.3g} J"


def energy_line(e: ChannelEnergy) -> str:
    """One channel: gross over the study, the idle power and net, per event where counted."""
    name = CHANNEL_NAMES.get(e.channel, e.channel)
    line = f"energy, {name}: {_joules(e.gross_j)} gross over {e.seconds:.0f} s"
    if e.gross_j_per_event is not None:
        line += f" ({_joules(e.gross_j_per_event)}/event)"
    if e.idle_w is None or e.idle_w_ci is None or e.net_j_ci is None:
        return line + f"; net of idle: cannot tell ({e.idle_samples} idle samples)"
    level = f"{100 * e.level:.0f}%"
    line += (f"; idle {e.idle_w:.1f} W [{e.idle_w_ci[0]:.1f}, {e.idle_w_ci[1]:.1f}] {level} from "
             f"{e.idle_samples} samples; net {_joules(e.net_j)} [{_joules(e.net_j_ci[0])}, {_joules(e.net_j_ci[1])}]")
    if e.net_j_per_event is not None and e.net_j_per_event_ci is not None:
        line += (f" ({_joules(e.net_j_per_event)}/event [{_joules(e.net_j_per_event_ci[0])}, "
                 f"{_joules(e.net_j_per_event_ci[1])}])")
    if e.net_j_ci[0] <= 0 <= e.net_j_ci[1]:
        line += ": the runs drew nothing on this channel that its idle power can tell apart"
    return line


def phase_table(result: MonitorResult) -> Table:
    table = Table(title=f"machine beside the study: means per phase, a sample every {result.interval_s:g} s",
                  title_justify="left")
    for col in ("phase", "n", "s", "busy", "steal", "CPU PSI", "load", "mem GiB", "swap GiB", "MHz"):
        table.add_column(col, justify="left" if col == "phase" else "right")
    channels = sorted({ch for p in result.phases for ch in p.watts})
    for ch in channels:
        table.add_column(f"{ch} W", justify="right")
    for p in result.phases:
        freq = "-" if p.freq_mhz is None else f"{p.freq_mhz:.0f}" + (
            f" (min {p.freq_mhz_min:.0f})" if p.freq_mhz_min is not None and p.freq_mhz_min < p.freq_mhz - 0.5 else "")
        table.add_row(p.phase, str(p.samples), f"{p.seconds:.0f}", _f(p.busy, ".0%"), _f(p.steal, ".1%"),
                      _f(p.pressure_cpu, ".0%"), _f(p.load1, ".2f"), _f(p.mem_used_gib, ".2f"),
                      _f(p.swap_used_gib, ".2f"), freq, *(_f(p.watts.get(ch), ".1f") for ch in channels))
    return table


def render(result: MonitorResult, console, sources_said: bool = False) -> None:
    """The phase table, the missing sources (unless the study's start already said them), the
    energy lines and notes."""
    console.print(phase_table(result))
    if result.lacks and not sources_said:
        console.print(escape("monitor: not here: " + "; ".join(result.lacks)), highlight=False)
    for e in result.energy:
        console.print(escape(energy_line(e)), highlight=False)
    for note in result.notes:
        console.print(escape(f"note: {note}"), highlight=False)
    if result.campaign_id is not None:
        console.print(f"monitor samples: perflab results {result.campaign_id} --monitor-csv FILE", highlight=False)
