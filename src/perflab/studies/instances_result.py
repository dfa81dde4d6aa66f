"""What an instances study found: throughput points per policy, the fork-master rows and verdict.

The fork-master verdict pools every paired round of every N into one exact two-sided sign test
of "NUMA-bound masters and one unbound master give the same throughput" (one hypothesis, so no
multiplicity correction): each pair is one round's NUMA / no-NUMA throughput ratio, both modes
doing the same events with the same workers. The sign test needs no distributional assumption,
and a burst of interference that hits one side of a pair moves only that pair's sign.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from perflab.stats import CI, median, median_ci

MIN_LEVEL = 0.90  # the default repetitions must give at least this interval (or a note says so)
ALPHA = 0.05


def _ci(d: Any) -> CI | None:
    return CI.from_dict(d) if d else None


def _ci_dict(ci: CI | None) -> dict | None:
    return ci.as_dict() if ci is not None else None


@dataclass
class Point:
    n: int
    throughput: float | None  # median over rounds of total work / makespan; None: every round failed
    ci: CI | None
    per_copy: float | None
    reps: int  # rounds that gave a value
    failed: int = 0  # rounds left out because a copy failed
    gain_per_copy: float | None = None  # (T(n) - T(previous n)) / (n - previous n)
    own_metric: float | None = None  # the workload's own per-copy metric, median (never summed)
    start_spread_us: float | None = None  # median gate start spread (incidental, not a design key)
    samples: list[float] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ci"] = _ci_dict(self.ci)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Point":
        return cls(**{**d, "ci": _ci(d.get("ci"))})


@dataclass
class PolicyScan:
    policy: str
    points: list[Point]
    optimum_n: int | None
    optimum_throughput: float | None
    within_1pct_n: int | None  # smallest N whose throughput is within 1% of the optimum
    knee_n: float | None = None  # where the throughput curve bends (two-segment fit, BIC)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["points"] = [p.as_dict() for p in self.points]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "PolicyScan":
        return cls(**{**d, "points": [Point.from_dict(p) for p in d["points"]]})


@dataclass
class ForkRow:
    n: int  # workers in all, in both modes
    no_numa: float | None  # one unbound master forking n workers, median throughput
    numa: float | None  # one bound master per NUMA node forking its share of workers and events
    gain: float | None  # median of the per-round ratios numa / no-numa
    ci: CI | None  # order-statistic CI of that median, with its level
    ratios: list[float] = field(default_factory=list)
    masters: list[list[int]] = field(default_factory=list)  # [node, workers, events] per master

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ci"] = _ci_dict(self.ci)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ForkRow":
        return cls(**{**d, "ci": _ci(d.get("ci"))})


@dataclass
class ForkVerdict:
    gain: float | None  # median of all paired ratios
    ci: CI | None
    pairs: int
    above: int  # pairs where NUMA was faster
    p_value: float
    significant: bool
    text: str

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["ci"] = _ci_dict(self.ci)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ForkVerdict":
        return cls(**{**d, "ci": _ci(d.get("ci"))})


def sign_test(ratios: Sequence[float]) -> tuple[int, int, float]:
    """Exact two-sided sign test of median ratio 1: (pairs without ties, pairs above 1, p)."""
    above = sum(1 for r in ratios if r > 1)
    below = sum(1 for r in ratios if r < 1)
    m = above + below
    if m == 0:
        return 0, 0, 1.0
    k = min(above, below)
    tail = sum(math.comb(m, i) for i in range(k + 1)) / 2 ** m
    return m, above, min(1.0, 2 * tail)


def fork_verdict(rows: Sequence[ForkRow], alpha: float = ALPHA) -> ForkVerdict:
    """One verdict on NUMA-bound masters over every paired round of every N."""
    ratios = [r for row in rows for r in row.ratios]
    if not ratios:
        return ForkVerdict(None, None, 0, 0, 1.0, False, "fork-master: no paired rounds finished; no verdict")
    m, above, p = sign_test(ratios)
    gain = median(ratios)
    ci = median_ci(ratios)
    evidence = (f"median ratio {gain:.3f} ({ci.label()} {ci.low:.3f}-{ci.high:.3f}) over {len(ratios)} "
                f"paired rounds, NUMA faster in {above} of {m}; sign test p = {p:.2g}")
    significant = p < alpha
    if significant and gain > 1:
        text = f"one bound master per NUMA node gives {100 * (gain - 1):+.1f} % throughput at equal work: {evidence}"
    elif significant and gain < 1:
        text = f"one bound master per NUMA node costs {100 * (gain - 1):+.1f} % throughput at equal work: {evidence}"
    else:
        text = f"no evidence that NUMA-bound masters change throughput at equal work: {evidence}"
    return ForkVerdict(gain, ci, len(ratios), above, p, significant, text)


@dataclass
class InstancesResult:
    unit: str
    ns: list[int]
    scans: list[PolicyScan]
    optimum_n: int | None
    optimum_throughput: float | None
    optimum_policy: str | None
    own_metric: str | None = None  # the workload's own rate metric, shown per copy beside
    fork: list[ForkRow] | None = None
    fork_verdict: ForkVerdict | None = None
    failures: dict[str, int] = field(default_factory=dict)  # why runs failed -> how many
    notes: list[str] = field(default_factory=list)
    level: float = 0.0  # the level of a point's CI at the configured rounds
    campaign_id: int | None = None

    @property
    def failed(self) -> bool:
        """Every point of every policy failed: nothing to rank."""
        return self.optimum_n is None

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["scans"] = [s.as_dict() for s in self.scans]
        d["fork"] = [r.as_dict() for r in self.fork] if self.fork is not None else None
        d["fork_verdict"] = self.fork_verdict.as_dict() if self.fork_verdict else None
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "InstancesResult":
        d = dict(d)
        d["scans"] = [PolicyScan.from_dict(s) for s in d["scans"]]
        d["fork"] = [ForkRow.from_dict(r) for r in d["fork"]] if d.get("fork") is not None else None
        d["fork_verdict"] = ForkVerdict.from_dict(d["fork_verdict"]) if d.get("fork_verdict") else None
        return cls(**d)
