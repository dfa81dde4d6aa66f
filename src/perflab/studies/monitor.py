"""The machine beside a study: its monitor samples summarised per phase, and energy per event
gross and net of the idle power.

Energy of a power channel (the node's meter, RAPL's packages and DRAM, the GPUs) over the study
phase is the sum of each sample's watts times its interval (RAPL's watts are the interval's mean,
so that is exact for RAPL; the node's and a GPU's are readings at the sample, a left Riemann sum
at the monitor's interval). The study phase includes what the study does between runs (building,
planning, storing), so gross energy per event is what the job cost the node; net subtracts the
idle power over the same time: what the runs added to a machine that was on anyway. Idle power is
the median of the idle phases' samples with its order-statistic interval at ``level`` (samples a
second apart are taken as independent: a drifting idle makes the interval too narrow, which is why
the idle-before and idle-after medians are both reported). Net energy's interval carries only the
idle power's uncertainty, not the meter's own error.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from perflab.stats import median
from perflab.studies.cost.energy import events_metric
from perflab.stats.interval import median_ci

IDLE_PHASES = ("idle-before", "idle-after")
# An idle phase busier than this was not idle (other load on the machine): said beside net energy.
IDLE_BUSY = 0.10
# Below this many idle samples the interval of the idle median is too wide to subtract (five
# samples give only a 94% interval spanning all of them): net energy then reads "cannot tell".
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
    idle_w_coverage: float | None = None
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
        def pair(v: Any) -> tuple[float, float] | None:
            return tuple(v) if v is not None else None  # type: ignore[return-value]

        energy = [ChannelEnergy(**{**e, "idle_w_ci": pair(e.get("idle_w_ci")), "net_j_ci": pair(e.get("net_j_ci")),
                                   "net_j_per_event_ci": pair(e.get("net_j_per_event_ci"))})
                  for e in d.get("energy") or ()]
        return cls(d.get("campaign_id"), d["interval_s"], d["idle_s"], list(d["have"]), list(d["lacks"]),
                   [PhaseSummary(**p) for p in d.get("phases") or ()], energy, d.get("events_metric"),
                   d.get("events"), list(d.get("notes") or ()))


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


def channel_energy(channel: str, timed: Sequence[tuple[dict[str, Any], float]], events: float | None,
                   level: float) -> ChannelEnergy:
    study = [(channel_watts(r["sample"]).get(channel), dt) for r, dt in timed if r["phase"] == "study"]
    study = [(w, dt) for w, dt in study if w is not None]
    seconds = sum(dt for _, dt in study)
    gross = sum(w * dt for w, dt in study)
    idle = {p: [w for r, _ in timed if r["phase"] == p and (w := channel_watts(r["sample"]).get(channel)) is not None]
            for p in IDLE_PHASES}
    both = idle["idle-before"] + idle["idle-after"]
    out = ChannelEnergy(channel, round(seconds, 3), gross, len(both), level,
                        idle_before_w=median(idle["idle-before"]) if idle["idle-before"] else None,
                        idle_after_w=median(idle["idle-after"]) if idle["idle-after"] else None)
    per_event = events if events and events > 0 else None
    if per_event:
        out.gross_j_per_event = gross / per_event
    if len(both) >= MIN_IDLE_SAMPLES:
        ci = median_ci(both, level)
        out.idle_w, out.idle_w_ci, out.idle_w_coverage = median(both), (ci.low, ci.high), ci.level
        out.net_j = gross - out.idle_w * seconds
        # a higher idle power leaves less to the runs: the interval's ends swap
        out.net_j_ci = (gross - ci.high * seconds, gross - ci.low * seconds)
        if per_event:
            out.net_j_per_event = out.net_j / per_event
            out.net_j_per_event_ci = (out.net_j_ci[0] / per_event, out.net_j_ci[1] / per_event)
    return out


def analyse(rows: Sequence[dict[str, Any]], events: float | None = None, events_metric: str | None = None,
            campaign_id: int | None = None, level: float = 0.95) -> MonitorResult:
    """A campaign's monitor samples (store.monitor_samples) and the events its runs processed."""
    meta = next((r["sample"] for r in rows if r["phase"] == "sources"), {})
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
                     for p in busy) + ": other load on this machine); idle power and net energy include that load's")
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


def stored_result(store: Any, campaign_id: int, workload: Any = None, level: float = 0.95) -> MonitorResult | None:
    """The monitor result of a stored campaign (None when it was not monitored): events counted
    over its runs and its child campaigns' (a lab's studies), by the workload's event metric."""
    rows = store.monitor_samples(campaign_id)
    if not rows:
        return None
    metric = events_metric(workload.metrics, workload.primary_metric) if workload is not None else "events"
    ids = [campaign_id, *(c.id for c in store.campaigns(parent_id=campaign_id))]
    results = [m.result for cid in ids for m in store.measurements(cid)]
    return analyse(rows, campaign_events(results, metric), metric, campaign_id, level)
