"""What an instances study found (throughput points per policy, memory, the fork-master rows and
verdict) and the figures it is computed from: a point's throughput over its makespan.

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

from perflab.model import RunResult, Workload
from perflab.stats import CI, median, median_ci
from perflab.studies.base import decode
from perflab.studies.cost.energy import run_joules
from perflab.studies.instances import power
from perflab.studies.instances.optimum import Step

MIN_LEVEL = 0.90  # the default repetitions must give at least this interval (or a note says so)
ALPHA = 0.05


class _WithCI:
    """as_dict / from_dict of a row whose ``ci`` is a CI or None (asdict gives its low/high/level)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]  # a subclass is a dataclass; this mixin is not

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Any:
        return decode(cls, d)


@dataclass
class Point(_WithCI):
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
    pss_kb: float | None = None  # median peak PSS of one copy's process tree
    ipc: float | None = None  # instructions / cycles of all copies together (PMU only)
    llc_per_unit: float | None = None  # last-level-cache load misses per unit of work (PMU only)
    watts: float | None = None  # median over rounds: the batch's joules / its makespan
    joules_per_unit: float | None = None  # median over rounds: joules / total work


@dataclass
class PolicyScan:
    policy: str
    points: list[Point]
    optimum_n: int | None
    optimum_throughput: float | None
    within_1pct_n: int | None  # smallest N whose median is within 1% of the highest (descriptive)
    knee_n: float | None = None  # where the throughput curve bends (two-segment fit, BIC)
    best_n: int | None = None  # the highest median among the candidates the optimum is tested against
    top_n: int | None = None  # the highest median of all (past the CPU count too): not an answer
    steps: list[Step] = field(default_factory=list)  # the tests behind the optimum
    reason: str = ""  # why the optimum is this N, or why there is none

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["points"] = [p.as_dict() for p in self.points]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "PolicyScan":
        return decode(cls, d)


@dataclass
class ForkRow(_WithCI):
    n: int  # workers in all, in both modes
    no_numa: float | None  # one unbound master forking n workers, median throughput
    numa: float | None  # one bound master per NUMA node forking its share of workers and events
    gain: float | None  # median of the per-round ratios numa / no-numa
    ci: CI | None  # order-statistic CI of that median, with its level
    ratios: list[float] = field(default_factory=list)
    masters: list[list[int]] = field(default_factory=list)  # [node, workers, events] per master
    no_numa_pss_kb: float | None = None  # all masters' and workers' PSS together, median
    numa_pss_kb: float | None = None


@dataclass
class ForkVerdict(_WithCI):
    gain: float | None  # median of all paired ratios
    ci: CI | None
    pairs: int
    above: int  # pairs where NUMA was faster
    p_value: float
    significant: bool
    text: str
    rounds_needed: int | None = None  # no verdict, pairs at two speeds: the rounds that would see 5 %


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
    change = f"{100 * abs(gain - 1):.1f} % throughput at equal work: {evidence}"
    if significant and gain > 1:
        text = f"one bound master per NUMA node gives +{change}"
    elif significant and gain < 1:
        text = f"one bound master per NUMA node costs {change}"
    else:
        text = f"no evidence that NUMA-bound masters change throughput at equal work: {evidence}"
    rounds = max(len(row.ratios) for row in rows)
    sized = None if significant else power.fork_rounds(ratios, sum(1 for row in rows if row.ratios), alpha)
    if sized is not None and sized[1] > rounds:
        return ForkVerdict(gain, ci, len(ratios), above, p, significant,
                           f"{text}; {power.fork_sentence(sized[0], sized[1], rounds)}", sized[1])
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
    level: float = 0.0  # the level of a point's CI at the configured rounds (0: one round, no CI)
    reps: int = 0  # rounds per point asked for
    cpus: int | None = None  # copies the usable CPUs hold at once; N above it is "past the CPU count"
    ranked_by: str = ""  # which metric the scan ranks by, in which direction, and why
    own_higher_is_better: bool = True  # the direction the workload declares for its own metric
    summed: bool = False  # the throughput is the sum over copies of own_metric (summed_metric)
    memory: dict[str, Any] | None = None  # PSS per copy and per NUMA node at the optimum
    energy_source: str | None = None  # where the watts come from (None: not measured)
    energy_optimum_n: int | None = None  # fewest joules per unit of work (optimum policy)
    rounds_needed: int | None = None  # two speeds, no gain past the CPU count: the rounds that would see one
    asked: str = ""  # what the rounds can and cannot see at two speeds, and the rounds asked for
    # --until-decided: the design and where it stopped (run/looks.Plan.as_dict); asked says it
    sequential: dict | None = None
    min_effect: float = 0.0
    campaign_id: int | None = None

    @property
    def failed(self) -> bool:
        """Every point of every policy failed: nothing to rank."""
        return not any(p.throughput is not None for s in self.scans for p in s.points)

    def verdict(self) -> str:
        """The answer in one sentence, with what it rests on (terminal and JSON both show it)."""
        if self.failed:
            return "none: every point failed (see the notes for why)"
        return self._answer() + (f"; {self.asked}" if self.asked else "")

    def with_fork(self, verdict: str) -> str:
        """``verdict`` with the fork master's after it, one sentence: where one line holds both (the
        report's verdict; the terminal prints them on lines of their own)."""
        if self.fork_verdict is None:
            return verdict
        return ((verdict or "").rstrip(".") + ". Fork master: " + self.fork_verdict.text).strip()

    def _answer(self) -> str:
        if self.optimum_n is None:
            scan = max((s for s in self.scans if s.top_n is not None),
                       key=lambda s: next(p.throughput for p in s.points if p.n == s.top_n))  # type: ignore[arg-type, return-value]  # top_n is a measured point
            top = next(p for p in scan.points if p.n == scan.top_n)
            return (f"{scan.reason}; the highest median was N = {top.n} (policy {scan.policy}, "
                    f"{top.throughput:.4g} {self.unit} from {top.reps} round{'s' * (top.reps != 1)}), "
                    "which is not an answer")
        scan = next(s for s in self.scans if s.policy == self.optimum_policy)
        at = next(p for p in scan.points if p.n == self.optimum_n)
        ci = f", {at.ci.label()} {at.ci.low:.4g}-{at.ci.high:.4g}" if at.ci is not None else ""
        which = (f"policy {scan.policy} (policies ranked by median, not tested against each other)"
                 if len(self.scans) > 1 else f"policy {scan.policy}")
        why = f": {scan.reason}" if scan.reason else ""
        return (f"N = {self.optimum_n}, {which}, {at.throughput:.4g} {self.unit}{ci}, "
                f"{at.reps} rounds{why}")

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["scans"] = [s.as_dict() for s in self.scans]
        d["fork"] = [r.as_dict() for r in self.fork] if self.fork is not None else None
        d["fork_verdict"] = self.fork_verdict.as_dict() if self.fork_verdict else None
        d["verdict"] = self.verdict()
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "InstancesResult":
        return decode(cls, d)  # "verdict", which as_dict adds, names no field


def point_throughput(results: Sequence[RunResult], work: str | None,
                     summed: str | None = None) -> tuple[float | None, str | None]:
    """(total work / makespan, None) for one point, or (None, why) when a copy failed.

    The makespan runs from the first start to the last finish of the point's copies (SPEC
    rate's definition), so copies that do not overlap in time do not add up. ``summed``: a
    per-copy rate (see summed_metric) whose sum over the copies is the point's throughput.
    """
    for r in results:
        if not r.ok:
            return None, r.failure or "failed"
        for name in (work, summed):
            if name is not None and name not in r.metrics:
                return None, f"no '{name}' metric"
    if summed is not None:
        return sum(float(r.metrics[summed]) for r in results), None
    makespan = (max(r.end_ns for r in results) - min(r.start_ns for r in results)) / 1e9
    if makespan <= 0:
        return None, "no duration"
    total = sum(float(r.metrics[work]) for r in results) if work else float(len(results))
    return total / makespan, None


def points_of(runs: Sequence[Any], key_name: str) -> dict[tuple[Any, int, int], list[Any]]:
    """(policy or mode, n, round) -> the point's runs (objects with .params and .result)."""
    out: dict[tuple[Any, int, int], list[Any]] = {}
    for r in runs:
        p = r.params
        if key_name in p:
            out.setdefault((p[key_name], int(p["n"]), int(p["round"])), []).append(r)
    return out


def pss_total(results: Sequence[RunResult]) -> float | None:
    """Summed peak PSS of a point's copies, or None unless every copy has a figure."""
    values = [r.metrics.get("pss_kb") for r in results]
    known = [v for v in values if v is not None]
    return float(sum(known)) if values and len(known) == len(values) else None


def fork_rows(ns: Sequence[int], pts, work: str | None) -> list[ForkRow]:
    """Per N: both modes' median throughput and PSS, and the per-round ratios NUMA / no NUMA."""
    rows = []
    for n in ns:
        per_mode: dict[str, dict[int, float]] = {"no-numa": {}, "numa": {}}
        pss: dict[str, list[float]] = {"no-numa": [], "numa": []}
        for (mode, k, rnd), runs in pts.items():
            if k != n:
                continue
            results = [r.result for r in runs]
            tp, _ = point_throughput(results, work)
            if tp is not None:
                per_mode[mode][rnd] = tp
                kb = pss_total(results)
                if kb is not None:
                    pss[mode].append(kb)
        paired = sorted(set(per_mode["no-numa"]) & set(per_mode["numa"]))
        ratios = [per_mode["numa"][r] / per_mode["no-numa"][r] for r in paired]
        a = median(list(per_mode["no-numa"].values())) if per_mode["no-numa"] else None
        b = median(list(per_mode["numa"].values())) if per_mode["numa"] else None
        rows.append(ForkRow(n, a, b, median(ratios) if ratios else None,
                            median_ci(ratios) if ratios else None, ratios,
                            no_numa_pss_kb=median(pss["no-numa"]) if pss["no-numa"] else None,
                            numa_pss_kb=median(pss["numa"]) if pss["numa"] else None))
    return rows


def memory_at(runs: Sequence[Any], node_of_copy: dict[int, Any], policy: str, n: int) -> dict[str, Any] | None:
    """PSS at one point: per copy (median over copies and rounds) and per node (median over rounds
    of the summed PSS of the copies placed there; 'any' for unbound copies)."""
    per_copy: list[float] = []
    per_node: dict[str, list[float]] = {}
    for (p, k, _rnd), point in points_of(runs, "policy").items():
        if (p, k) != (policy, n) or not all(r.result.ok for r in point):
            continue
        sums: dict[str, float] = {}
        for r in point:
            kb = r.result.metrics.get("pss_kb")
            if kb is None:
                break
            per_copy.append(float(kb))
            node = str(node_of_copy.get(int(r.params["copy"]), "any"))
            sums[node] = sums.get(node, 0.0) + float(kb)
        else:
            for node, kb in sums.items():
                per_node.setdefault(node, []).append(kb)
    if not per_copy:
        return None
    nodes = {node: median(v) for node, v in sorted(per_node.items())}
    return {"policy": policy, "n": n, "per_copy_kb": median(per_copy), "per_node_kb": nodes,
            "total_kb": sum(nodes.values())}


def counter_ratio(results: Sequence[RunResult], num: str, den: str | None) -> list[float]:
    """[sum of counter num / sum of den over a point's copies] (den: a counter or a work metric;
    None: copies), or [] when a copy lacks either."""
    def value(r: RunResult, name: str | None) -> float | None:
        if name is None:
            return 1.0
        return r.counters.get(name, r.metrics.get(name))

    pairs = [(value(r, num), value(r, den)) for r in results]
    if not pairs or any(a is None or b is None for a, b in pairs):
        return []
    known = [(a, b) for a, b in pairs if a is not None and b is not None]  # all of them, as checked
    total = sum(b for _, b in known)
    return [sum(a for a, _ in known) / total] if total > 0 else []


def point_energy(results: Sequence[RunResult], work: str | None) -> tuple[float, float] | None:
    """(watts, joules per unit of work) of one concurrent batch whose energy was measured.

    The batch's joules are stored with its first copy (one meter reading covers the batch).
    """
    measured = [r for r in results if r.energy]
    joules = run_joules(measured[0]) if measured else None
    if joules is None or any(not r.ok for r in results):
        return None
    makespan = (max(r.end_ns for r in results) - min(r.start_ns for r in results)) / 1e9
    total = sum(float(r.metrics.get(work, 0.0)) for r in results) if work else float(len(results))
    if makespan <= 0 or total <= 0:
        return None
    return joules / makespan, joules / total


def work_metric(workload: Workload) -> str | None:
    """The metric that counts a copy's fixed work ('events' for an 'events_per_s' rate), if any."""
    rate = workload.primary_metric
    if rate is None or not workload.higher_is_better or not rate.endswith("_per_s"):
        return None
    base = rate[: -len("_per_s")]
    return base if any(f"(?P<{base}>" in m.regex for m in workload.metrics) else None


def summed_metric(workload: Workload) -> str | None:
    """The primary metric when it is a per-copy rate to add up: declared higher is better, with no
    work count to divide by the makespan (a fixed-time benchmark's score, frames/s, nodes/s)."""
    metric = workload.primary_metric
    return metric if metric and workload.higher_is_better and work_metric(workload) is None else None


def unit_of(workload: Workload) -> str:
    base = work_metric(workload)
    summed = summed_metric(workload)
    return f"{base}/s" if base else f"total {summed}" if summed else "copies/s"


def ranking(workload: Workload) -> str:
    """What the scan ranks by and in which direction, from the workload's declared primary metric."""
    metric = workload.primary_metric
    work = work_metric(workload)
    if work:
        return (f"ranked by machine throughput in {work}/s, higher is better: the copies' total '{work}' "
                f"over the makespan, from the primary metric {metric} (declared higher is better)")
    if summed_metric(workload):
        # A fixed-time benchmark's copies all take its time whatever their speed: copies/s would
        # grow with N forever, while the sum of their scores stops where the machine is full.
        return (f"ranked by total {metric} over N copies, higher is better: the sum of each copy's "
                f"{metric} (the primary metric, declared higher is better, a rate each copy measures "
                f"while all N run together), not one copy's {metric}")
    if metric:
        # A lower-is-better figure may be CPU time (gnugo's seconds per move): summed or inverted
        # over copies it rewarded oversubscription, so it is shown beside, in its direction.
        return (f"ranked by machine throughput in copies/s, higher is better (one copy = one unit of "
                f"work): the primary metric {metric} (declared lower is better) names no work count "
                f"to add up, so it is shown per copy, not summed")
    return ("ranked by machine throughput in copies/s, higher is better (one copy = one unit of work; "
            "the workload declares no primary metric)")
