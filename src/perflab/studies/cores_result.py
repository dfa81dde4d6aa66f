"""The result of a per-core scan: per-CPU rows, slow cores, disturbances (JSON round trip)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from perflab.stats import CI


@dataclass
class CpuRow:
    cpu: int
    socket: int
    core: int
    node: int
    siblings: tuple[int, ...]
    runs: int = 0  # successful runs
    failed: int = 0
    median: float | None = None  # cost, in the result's unit
    ci: CI | None = None
    ratio: float | None = None  # median over rounds of (cost / median of the other CPUs' costs)
    ratio_ci: CI | None = None
    rounds: int = 0  # rounds with a ratio
    slower_rounds: int = 0  # rounds in which its ratio was above 1
    p_value: float | None = None
    p_adjusted: float | None = None
    disturbed: tuple[int, ...] = ()  # rounds in which it was an outlier above its usual level
    normal: tuple[int, ...] = ()  # rounds in which it was an outlier below its usual level
    verdict: str = ""  # "slow", "intermittent", "disturbed", "failed" or ""
    mode_shares: tuple[float, ...] = ()  # share of its runs in each run-time mode (when several)
    ipc: float | None = None  # median instructions per cycle (perf stat, where the PMU counts)
    ghz: float | None = None  # median effective frequency: cycles / task-clock


@dataclass
class SlowCore:
    """A physical core with at least one slow thread, reported once."""

    core: int
    socket: int
    node: int
    cpus: tuple[int, ...]  # the slow threads
    siblings: tuple[int, ...]  # all threads of the core
    ratio: float  # worst slow thread's
    ratio_ci: CI
    p_adjusted: float
    rounds: int
    slower_rounds: int


@dataclass
class Disturbance:
    """A CPU slower than the rest in some rounds only: interference, not a slow core."""

    cpu: int
    rounds: tuple[int, ...]
    ratio: float  # median ratio to the rest in those rounds
    intermittent: bool  # slower in most rounds but not in nearly all (else: a few rounds)


@dataclass
class CoresResult:
    campaign_id: int | None = None
    mode: str = "sequential"
    unit: str = "s"
    rounds: int = 0
    stopped: str = ""
    elapsed_s: float = 0.0
    cpus: list[CpuRow] = field(default_factory=list)
    slow: list[SlowCore] = field(default_factory=list)
    disturbances: list[Disturbance] = field(default_factory=list)
    friedman: dict[str, float] | None = None  # statistic, p_value, rounds, cpus
    noise: float | None = None  # robust SD of the per-round log-ratios
    mde: float | None = None  # smallest slowdown the scan could have detected (fraction)
    modes: dict[str, Any] | None = None  # stats.modes.Modes.as_dict() of the CPU-centred run times
    runs: int = 0
    failed: int = 0
    failures: dict[str, int] = field(default_factory=dict)
    verdict: str = ""
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CoresResult":
        def ci(v: dict | None) -> CI | None:
            return CI.from_dict(v) if v else None

        d = dict(d)
        d["cpus"] = [CpuRow(**{**c, "siblings": tuple(c["siblings"]), "ci": ci(c["ci"]),
                               "ratio_ci": ci(c["ratio_ci"]), "disturbed": tuple(c["disturbed"]),
                               "normal": tuple(c["normal"]), "mode_shares": tuple(c["mode_shares"])})
                     for c in d.get("cpus", [])]
        d["slow"] = [SlowCore(**{**s, "cpus": tuple(s["cpus"]), "siblings": tuple(s["siblings"]),
                                 "ratio_ci": CI.from_dict(s["ratio_ci"])}) for s in d.get("slow", [])]
        d["disturbances"] = [Disturbance(**{**x, "rounds": tuple(x["rounds"])})
                             for x in d.get("disturbances", [])]
        return cls(**d)


def slow_cores(rows: list[CpuRow]) -> list[SlowCore]:
    """Slow threads grouped by physical core: a slow core is reported once with its siblings."""
    out: dict[int, SlowCore] = {}
    for r in rows:
        if r.verdict != "slow":
            continue
        prev = out.get(r.core)
        if prev is None:
            out[r.core] = SlowCore(r.core, r.socket, r.node, (r.cpu,), r.siblings, r.ratio, r.ratio_ci,
                                   r.p_adjusted, r.rounds, r.slower_rounds)
            continue
        prev.cpus = tuple(sorted(prev.cpus + (r.cpu,)))
        prev.p_adjusted = min(prev.p_adjusted, r.p_adjusted)
        if r.ratio > prev.ratio:
            prev.ratio, prev.ratio_ci, prev.rounds, prev.slower_rounds = r.ratio, r.ratio_ci, r.rounds, r.slower_rounds
    return sorted(out.values(), key=lambda s: -s.ratio)
