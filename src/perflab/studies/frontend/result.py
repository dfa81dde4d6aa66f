"""The front-end study's result value: points per (size, page mode), paired 4K/2M ratios, knees,
the verdict with its evidence (studies/frontend/study.py makes it; report/ renders it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from perflab.stats import CI
from perflab.studies.base import StudyResult, decode


@dataclass
class Point:
    cpu: int | None
    mode: str
    bytes: int  # hot code size (n cases)
    n: int
    reps: int  # successful runs
    median_ns: float | None  # per dispatch; None when every run failed
    ci: CI | None = None
    failed: int = 0
    span_bytes: int | None = None  # hot code span from sampled instruction addresses (perf)
    huge_kb: int | None = None  # text on huge pages as the process saw it (2m mode)
    itlb_per_dispatch: float | None = None  # iTLB-load-misses / dispatches (median over runs)
    l1i_per_dispatch: float | None = None
    # --instrument cachegrind: simulated counts / dispatches (median over runs), and the largest
    # run-to-run spread of the counts, (max - min) / median
    i1_per_dispatch: float | None = None
    ll_i_per_dispatch: float | None = None  # last-level misses of instruction fetches (ILmr)
    ir_per_dispatch: float | None = None
    count_spread: float | None = None


@dataclass
class PageRatio:
    """4K/2M at one size from per-round pairs: > 1 means 2 MiB pages ran faster."""

    cpu: int | None
    bytes: int
    pairs: int
    ratio: float  # median of the per-round ratios
    ci: CI
    p_value: float  # one-sided Wilcoxon signed-rank, log(4K/2M) > 0
    p_adjusted: float | None = None  # Holm across every size tested
    helps: bool = False  # p_adjusted < alpha and ratio >= 1 + min_effect


@dataclass
class KneeReport:
    cpu: int | None
    mode: str
    knee_bytes: int | None  # None: no knee in range
    slope_before: float | None = None  # ns per doubling of code size
    slope_after: float | None = None
    score: float | None = None
    nearest: str | None = None  # the reference sizes within a factor 2 of the knee
    measure: str = "ns"  # per dispatch: the curve the knee is in (sim.MEASURE under cachegrind)


@dataclass
class Context:
    """What execute learned besides the runs: machine facts and what could not run."""

    code_bytes: int = 0
    references: dict[str, int] = field(default_factory=dict)
    tlb: list[dict] = field(default_factory=list)
    huge_method: str | None = None
    huge_reason: str = ""
    counters_reason: str = ""  # one line: counted, or why not
    spans: dict[str, int] = field(default_factory=dict)  # "cpu:n" -> sampled span bytes
    notes: list[str] = field(default_factory=list)
    cache_model_source: str = ""  # given, detected or fallback (--instrument cachegrind)


@dataclass
class FrontendResult(StudyResult):
    kind: str = "switch"
    code_bytes: int = 0
    huge_method: str | None = None
    huge_reason: str = ""
    counters_reason: str = ""
    references: dict[str, int] = field(default_factory=dict)
    tlb: list[dict] = field(default_factory=list)
    points: list[Point] = field(default_factory=list)
    ratios: list[PageRatio] = field(default_factory=list)
    knees: list[KneeReport] = field(default_factory=list)
    verdict: str = ""
    evidence: list[str] = field(default_factory=list)  # what the verdict rests on / does not show
    instrument: str = ""  # "cachegrind": the points carry simulated counts, not time
    cache_model: str = ""
    cache_model_source: str = ""
    # the only environment the simulated runs saw, (name, value) in order (JSON sorts a dict's keys)
    env: list[list[str]] = field(default_factory=list)
    expected_knee_bytes: int | None = None  # the simulated I1 size

    @classmethod
    def from_dict(cls, d: dict) -> "FrontendResult":
        return decode(cls, d)
