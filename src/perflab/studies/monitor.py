"""The machine beside a study: its monitor samples summarised per phase, and energy per event
gross and net of the idle power.

Energy of a power channel (the node's meter, RAPL's packages and DRAM, the GPUs) over the study
phase is the sum of each sample's watts times its interval (RAPL's watts are the interval's mean,
so that is exact for RAPL; the node's and a GPU's are readings at the sample, a left Riemann sum
at the monitor's interval). The study phase includes what the study does between runs (building,
planning, storing), so gross energy per event is what the job cost the node; net subtracts the
idle power over the same time: what the runs added to a machine that was on anyway. Idle power is
the mean of both idle phases' samples; net energy's interval at ``level`` is the study phase's mean
power less the idle mean, Welch's t on sample sizes made effective for the samples' lag-1
autocorrelation (stats/autocorr.py), times the study's seconds. What it covers, and how often it
stays quiet when the runs drew nothing, under four models of a meter is checks/monitor.py's.
The idle-before and idle-after medians are kept beside it, so a drifting idle power shows.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from perflab.stats import median
from perflab.studies.cost.energy import events_metric
from perflab.stats.autocorr import diff_ci, mean_ci
from perflab.studies.base import decode

if TYPE_CHECKING:
    from perflab.model import Workload
    from perflab.store import Store

IDLE_PHASES = ("idle-before", "idle-after")
# An idle phase busier than this was not idle (other load on the machine): said beside net energy.
IDLE_BUSY = 0.10
# Below this many idle samples neither the idle mean nor its autocorrelation is worth
# subtracting: net energy then reads "cannot tell" and names the --idle that would tell.
MIN_IDLE_SAMPLES = 6


def channel_watts(sample: dict[str, Any]) -> dict[str, float]:
    """Watts per power channel in one sample: node (IPMI), rapl (packages and DRAM; sub-domains
    such as core are inside their package, psys already holds the packages), gpu (all GPUs)."""
    out: dict[str, float] = {}
    if isinstance(sample.get("ipmi_w"), (int, float)):
        out["node"] = float(sample["ipmi_w"])
    rapl = sample.get("rapl_w") or {}
    tops = [w for k, w in rapl.items() if (k.count("/") == 0 or k.endswith("/dram")) and not k.endswith("psys")]
    if tops:
        out["rapl"] = float(sum(tops))
    gpus = [g["power_w"] for g in sample.get("gpus") or () if isinstance(g.get("power_w"), (int, float))]
    if gpus:
        out["gpu"] = float(sum(gpus))
    return out


@dataclass
class PhaseSummary:
    """Means over one phase's samples (None where no sample had the quantity)."""

    phase: str
    samples: int
    seconds: float
    busy: float | None = None
    steal: float | None = None
    pressure_cpu: float | None = None
    load1: float | None = None
    mem_used_gib: float | None = None
    swap_used_gib: float | None = None
    freq_mhz: float | None = None
    freq_mhz_min: float | None = None
    watts: dict[str, float] = field(default_factory=dict)


@dataclass
class ChannelEnergy:
    """One power channel over the study phase: gross, idle and net energy, per event."""

    channel: str
    seconds: float
    gross_j: float
    idle_samples: int
    level: float
    idle_w: float | None = None
    idle_w_ci: tuple[float, float] | None = None
    idle_before_w: float | None = None
    idle_after_w: float | None = None
    net_j: float | None = None
    net_j_ci: tuple[float, float] | None = None
    gross_j_per_event: float | None = None
    net_j_per_event: float | None = None
    net_j_per_event_ci: tuple[float, float] | None = None


@dataclass
class MonitorResult:
    campaign_id: int | None
    interval_s: float
    idle_s: float
    have: list[str]
    lacks: list[str]
    phases: list[PhaseSummary]
    energy: list[ChannelEnergy]
    events_metric: str | None = None
    events: float | None = None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "MonitorResult":
        return decode(cls, d)


def intervals(rows: Sequence[dict[str, Any]]) -> list[tuple[dict[str, Any], float]]:
    """(sample, the seconds it covers): since the sample before it, or since the monitor started
    (its 'sources' row) for a first sample."""
    return [(b, (b["t_ns"] - a["t_ns"]) / 1e9) for a, b in zip(rows, rows[1:])
            if b["phase"] != "sources" and b["t_ns"] > a["t_ns"]]


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def summarise_phase(phase: str, timed: Sequence[tuple[dict[str, Any], float]]) -> PhaseSummary:
    rows = [r["sample"] for r, _ in timed if r["phase"] == phase]
    seconds = sum(dt for r, dt in timed if r["phase"] == phase)

    def mean(key: str) -> float | None:
        return _mean([float(s[key]) for s in rows if isinstance(s.get(key), (int, float))])

    freqs = [float(v) for s in rows for v in (s.get("freq_mhz") or {}).values()]
    watts: dict[str, list[float]] = {}
    for s in rows:
        for ch, w in channel_watts(s).items():
            watts.setdefault(ch, []).append(w)
    return PhaseSummary(phase, len(rows), round(seconds, 3), mean("busy"), mean("steal"), mean("pressure_cpu"),
                        mean("load1"), mean("mem_used_gib"), mean("swap_used_gib"), _mean(freqs),
                        min(freqs) if freqs else None, {ch: sum(ws) / len(ws) for ch, ws in watts.items()})


def _segments(timed: Sequence[tuple[dict[str, Any], float]], channel: str,
              phases: Sequence[str]) -> list[list[float]]:
    """The channel's watts in ``phases``, one list per contiguous stretch of them (an idle phase,
    a study phase; a resumed campaign has several)."""
    out: list[list[float]] = []
    last = None
    for r, _ in timed:
        w = channel_watts(r["sample"]).get(channel)
        if r["phase"] in phases and w is not None:
            if r["phase"] != last or not out:
                out.append([])
            out[-1].append(w)
        last = r["phase"]
    return out


def channel_energy(channel: str, timed: Sequence[tuple[dict[str, Any], float]], events: float | None,
                   level: float) -> ChannelEnergy:
    study = [(w, dt) for r, dt in timed if r["phase"] == "study" and (w := channel_watts(r["sample"]).get(channel)) is not None]
    seconds = sum(dt for _, dt in study)
    gross = sum(w * dt for w, dt in study)
    idle = _segments(timed, channel, IDLE_PHASES)
    by_phase = {p: [w for seg, p2 in zip(idle, _phase_names(timed, channel)) if p2 == p for w in seg] for p in IDLE_PHASES}
    both = [w for seg in idle for w in seg]
    out = ChannelEnergy(channel, round(seconds, 3), gross, len(both), level,
                        idle_before_w=median(by_phase["idle-before"]) if by_phase["idle-before"] else None,
                        idle_after_w=median(by_phase["idle-after"]) if by_phase["idle-after"] else None)
    per_event = events if events and events > 0 else None
    if per_event:
        out.gross_j_per_event = gross / per_event
    idle_ci = mean_ci(idle, level) if len(both) >= MIN_IDLE_SAMPLES else None
    added = diff_ci(_segments(timed, channel, ("study",)), idle, level) if idle_ci is not None else None
    if idle_ci is not None and added is not None:
        out.idle_w, out.idle_w_ci = idle_ci.mean, (idle_ci.low, idle_ci.high)
        out.net_j = gross - idle_ci.mean * seconds
        out.net_j_ci = (out.net_j - (added.mean - added.low) * seconds, out.net_j + (added.high - added.mean) * seconds)
        if per_event:
            out.net_j_per_event = out.net_j / per_event
            out.net_j_per_event_ci = (out.net_j_ci[0] / per_event, out.net_j_ci[1] / per_event)
    return out


def _phase_names(timed: Sequence[tuple[dict[str, Any], float]], channel: str) -> list[str]:
    """The phase of each idle segment of ``_segments(timed, channel, IDLE_PHASES)``, in order."""
    names: list[str] = []
    last = None
    for r, _ in timed:
        if r["phase"] in IDLE_PHASES and channel in channel_watts(r["sample"]):
            if r["phase"] != last or not names:
                names.append(r["phase"])
        last = r["phase"]
    return names


def analyse(rows: Sequence[dict[str, Any]], events: float | None = None, events_metric: str | None = None,
            campaign_id: int | None = None, level: float = 0.95) -> MonitorResult:
    """A campaign's monitor samples (store.monitor_samples) and the events its runs processed."""
    meta: dict[str, Any] = next((r["sample"] for r in rows if r["phase"] == "sources"), {})
    timed = intervals(rows)
    present = [p for p in ("idle-before", "study", "idle-after") if any(r["phase"] == p for r, _ in timed)]
    phases = [summarise_phase(p, timed) for p in present]
    channels = sorted({ch for r, _ in timed for ch in channel_watts(r["sample"])})
    energy = [channel_energy(ch, timed, events, level) for ch in channels]
    notes = []
    for e in energy:
        if e.idle_w is None:
            notes.append(f"{e.channel}: net energy cannot tell from {e.idle_samples} idle samples "
                         f"(at least {MIN_IDLE_SAMPLES}); give --idle {max(5, MIN_IDLE_SAMPLES) * meta.get('interval_s', 1):g}s or more")
    busy = [p for p in phases if p.phase in IDLE_PHASES and p.busy is not None and p.busy > IDLE_BUSY]
    if busy and channels:
        notes.append("the idle phases were not idle (CPUs " + ", ".join(f"{100 * p.busy:.0f}% busy {p.phase}"
                     for p in busy if p.busy is not None) + ": other load on this machine); idle power and net energy include that load's")
    if channels and not events:
        notes.append("energy per event: the runs report no event count (a metric 'events' or the base "
                     "of an '<x>_per_s' primary metric)")
    return MonitorResult(campaign_id, float(meta.get("interval_s", 0.0)), float(meta.get("idle_s", 0.0)),
                         list(meta.get("have") or ()), list(meta.get("lacks") or ()), phases, energy,
                         events_metric, events, notes)


def campaign_events(results: Sequence[Any], metric: str | None) -> float | None:
    """Events the campaign's successful runs processed (None without an event metric)."""
    if metric is None:
        return None
    total = sum(float(r.metrics.get(metric, 0.0)) for r in results if r.ok)
    return total or None


def stored_result(store: Store, campaign_id: int, workload: Workload | None = None, level: float = 0.95) -> MonitorResult | None:
    """The monitor result of a stored campaign (None when it was not monitored): events counted
    over its runs and its child campaigns' (a lab's studies), by the workload's event metric."""
    rows = store.monitor_samples(campaign_id)
    if not rows:
        return None
    metric = events_metric(workload.metrics, workload.primary_metric) if workload is not None else "events"
    ids = [campaign_id, *(c.id for c in store.campaigns(parent_id=campaign_id))]
    results = [m.result for cid in ids for m in store.measurements(cid)]
    return analyse(rows, campaign_events(results, metric), metric, campaign_id, level)
