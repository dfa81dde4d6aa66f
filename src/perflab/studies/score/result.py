"""The suite score's result value: the terminal table, the JSON, the export and the store's summary
all come from it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from perflab.studies.base import StudyResult, decode
from perflab.studies.score.flags import CopyGroups, Disagreeing


@dataclass
class WorkloadScore:
    """One workload of the suite: its reference, its repetitions and its ratio."""

    name: str
    references: dict[str, float]  # metric -> the reference machine's value
    weight: float = 1.0
    values: list[dict[str, float]] = field(default_factory=list)  # per repetition: metric -> value
    rep_ratios: list[float] = field(default_factory=list)  # per repetition, HEPscore's rounding
    ratio: float | None = None  # HEPscore's: the median repetition's
    chosen: list[int] = field(default_factory=list)  # the repetition(s) the ratio rests on
    ratio_ci: list[float] | None = None  # [low, high] at the result's level
    copies: int | None = None
    threads_per_copy: int | None = None
    copy_values: list[list[float]] = field(default_factory=list)  # per repetition, per copy
    # per repetition, where only a summary of the copies is known (HEPscore's wl-stats):
    # {"min", "median", "max", "count"} of the copies' values
    copy_spread: list[dict[str, float]] = field(default_factory=list)
    unit: str = ""



@dataclass(kw_only=True)
class ScoreResult(StudyResult):
    """A suite score on one host: measured by ``perflab score`` or imported from a HEPscore report."""

    suite: str
    source: str  # "measured", or "imported from FILE (LAYOUT)"
    scaling: float
    reference_machine: str
    workloads: list[WorkloadScore] = field(default_factory=list)
    score: float | None = None
    score_ci: list[float] | None = None  # [low, high]: see method.py
    level: float = 0.95
    interval_method: str = ""
    cores: int | None = None  # what score_per_core divides by: the host's logical CPUs
    score_per_core: float | None = None
    watts: float | None = None
    watts_source: str = ""  # "measured: rapl" or "modelled: 1.6 x TDP x sockets"
    score_per_watt: float | None = None
    host: dict[str, Any] = field(default_factory=dict)
    file_score: float | None = None  # an imported report's own figure
    file_score_per_core: float | None = None
    mismatch: list[str] = field(default_factory=list)  # where the recomputed figures differ from the file's
    disagreeing: list[Disagreeing] = field(default_factory=list)
    rep_noise: float | None = None  # pooled robust SD of the log repetition residuals
    copy_groups: list[CopyGroups] = field(default_factory=list)
    cannot_tell: str = ""  # where no interval: why, and the one action that would give one

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["study"] = "score"
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ScoreResult":
        return decode(cls, d)  # "study", which as_dict adds, names no field

    @property
    def headline(self) -> str:
        """The one sentence: the score, its interval, per core."""
        if self.score is None:
            return f"{self.suite}: no score ({self.cannot_tell or 'no workload gave a ratio'})"
        ci = (f" ({self.level:.0%} CI {self.score_ci[0]:.4g}-{self.score_ci[1]:.4g})"
              if self.score_ci else "")
        per = f", {self.score_per_core:.4g} per core" if self.score_per_core is not None else ""
        return f"{self.suite} score {self.score:.6g}{ci}{per}"
