"""The gate's result value: one line per compared measure, each with the tests it rests on.

The terminal line, the summary, JUnit, Markdown and JSON are all derived from these values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from perflab.studies.compare.study import CompareResult, CompareRow
from perflab.studies.compare.keys import measure_title
from perflab.studies.run.result import level_text

# Exit statuses of a gate (cli/gate_common.py, docs/ci.md).
EXIT_PASS, EXIT_FAIL, EXIT_BAD_INPUT, EXIT_INCONCLUSIVE = 0, 1, 2, 3


@dataclass
class Check:
    """One test of a gated line: runs against runs (``runs``), a campaign median against the
    baseline's saved level (``drift``), or against the oldest recent save (``cumulative``)."""

    kind: str
    label: str  # '' or 'fast mode' / 'slow mode', or what the reference is
    median_a: float
    median_b: float
    lo: float  # CI of B/A at ``level`` (nan where the test gives none)
    hi: float
    level: float
    p_value: float
    p_adjusted: float = 1.0
    n_a: int = 0
    n_b: int = 0
    beyond: bool = False
    significant: bool = False
    decides: bool = True  # in the Holm family and in the verdict (runs checks once drift is known)
    estimate: float = math.nan  # B/A the interval is about where it is not the medians' ratio (the
    # looks' comparison within two speeds, studies/gate/looks.py); nan: the medians' ratio

    @property
    def ratio(self) -> float:
        return self.estimate if not math.isnan(self.estimate) else self.median_b / self.median_a

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "label": self.label, "median_a": self.median_a,
                "median_b": self.median_b, "ratio": self.ratio, "n_a": self.n_a, "n_b": self.n_b,
                "ci": {"low": self.lo, "high": self.hi, "level": self.level} if not math.isnan(self.lo) else None,
                "p_value": self.p_value, "p_adjusted": self.p_adjusted, "beyond": self.beyond,
                "significant": self.significant}


@dataclass
class GateLine:
    """One compared measure of one design point, and what the gate made of it."""

    row: CompareRow
    thresholds: list
    checks: list[Check] = field(default_factory=list)
    failed: bool = False
    inconclusive: str = ""  # why the gate cannot pass this line ('' when it can)
    verdict: str = ""
    notes: list[str] = field(default_factory=list)  # modes, drift, what the verdict rests on
    detectable: float = float("nan")  # smallest change the run-level test could see
    runs_needed: int = 0
    # What the judgement worked on (studies/gate/study.py): not rendered.
    samples: dict = field(default_factory=dict, repr=False)  # check label -> (A runs, B runs)
    drift: Any = field(default=None, repr=False)
    extra_var: float = field(default=0.0, repr=False)
    rel: float = field(default=0.0, repr=False)  # the tightest threshold as a share of A's median
    no_drift: str = field(default="", repr=False)  # why the saves' drift was not measured here
    n_a: int = field(default=0, repr=False)
    n_b: int = field(default=0, repr=False)
    repeated: bool = False  # decided by the looks of --until-decided (studies/gate/looks.py)

    @property
    def status(self) -> str:
        if self.failed:
            return "FAIL"
        if self.inconclusive:
            return "UNSURE"
        return "pass" if self.thresholds else "info"

    @property
    def main(self) -> Check | None:
        """The test the line's figures come from: the first run-level one."""
        return next((c for c in self.checks if c.kind == "runs"), None)

    def interval(self) -> tuple[float, float, float]:
        """(low, high, level) of B/A as printed: the exact interval where the gate computed one."""
        c = self.main
        if c is None or self.row.overall:
            return self.row.lo, self.row.hi, self.row.level
        return c.lo, c.hi, c.level

    def figures(self) -> tuple[float, float, str]:
        """(A's median, B's median, what they are) as every output prints them: on two speeds
        those of the like-with-like comparison, named, so the terminal, Markdown and JSON agree."""
        r, c = self.row, self.main
        if c is not None and c.label:
            return c.median_a, c.median_b, f"{c.label} median"
        return r.median_a, r.median_b, "median"

    def shown(self) -> tuple[float, float, str, float]:
        """(A's figure, B's, what they are, B/A) as every output prints them: B/A is the figures'
        ratio, or, where the looks decided within two speeds, the estimate their interval is about
        (the pooled medians' ratio can lie outside it)."""
        a, b, what = self.figures()
        c = self.main
        return a, b, what, c.estimate if c is not None and self.within_speeds else b / a

    @property
    def within_speeds(self) -> bool:
        """B/A is the looks' estimate within two speeds, not the figures' ratio (said beside it)."""
        c = self.main
        return c is not None and not math.isnan(c.estimate)

    def text(self, m: int) -> str:
        r = self.row
        lo, hi, level = self.interval()
        p = f"p={r.p_adjusted:.2g} (Holm over {m})" if self.thresholds else f"p={r.p_value:.2g} (not gated)"
        ci = f"{100 * level:.0f}% CI"
        if self.repeated:  # the looks' interval at the last look's level decided, not a p
            p, ci = "decided by the looks (--until-decided)", f"{level_text(level)} repeated CI"
        a, b, what, ratio = self.shown()
        within = " within speeds" if self.within_speeds else ""
        head = (f"{self.status:4} {measure_title(r.measure)} of {r.key}: {100 * (ratio - 1):+.1f} %{within} "
                f"({what} {a:.4g} -> {b:.4g}), B/A {ratio:.4f} "
                f"[{lo:.4f}, {hi:.4f}] {ci}, {p}; {self.verdict}")
        return "; ".join([head, *self.notes])

    def as_dict(self) -> dict[str, Any]:
        lo, hi, level = self.interval()
        d = {**self.row.as_dict(), "status": self.status, "verdict": self.verdict,
             "inconclusive": self.inconclusive, "thresholds": [t.text for t in self.thresholds]}
        d["ci"] = {"low": lo, "high": hi, "level": level}
        a, b, what, ratio = self.shown()
        if what != "median":  # the pooled figures kept apart: the line's own are the like-with-like ones
            d["pooled"] = {"median_a": d["median_a"], "median_b": d["median_b"], "ratio": d["ratio"]}
            d.update(median_a=a, median_b=b, ratio=ratio, compared=what)
        if self.within_speeds:
            d["within_speeds"] = True
        if self.repeated:
            d["ci"]["repeated"] = True
        d.update(checks=[c.as_dict() for c in self.checks], notes=self.notes,
                 detectable=self.detectable if not math.isnan(self.detectable) else None,
                 runs_needed=self.runs_needed or None)
        return d


@dataclass
class GateResult:
    baseline: str
    compare: CompareResult
    lines: list[GateLine] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    hosts: tuple[str, str] = ("", "")
    family: int = 0  # tests in the Holm family (gated ones only)
    sequential: dict | None = None  # the looks' record where the campaign was measured until decided

    @property
    def failed(self) -> bool:
        return any(ln.failed for ln in self.lines)

    @property
    def inconclusive(self) -> bool:
        return not self.failed and any(ln.inconclusive for ln in self.lines)

    @property
    def exit_status(self) -> int:
        return EXIT_FAIL if self.failed else EXIT_INCONCLUSIVE if self.inconclusive else EXIT_PASS

    @property
    def summary(self) -> str:
        gated = [ln for ln in self.lines if ln.thresholds]
        bad = [ln for ln in gated if ln.failed]
        unsure = [ln for ln in gated if ln.inconclusive and not ln.failed]
        what = (f"campaign {self.compare.b} against baseline '{self.baseline}' "
                f"(campaign {self.compare.a}), alpha {self.compare.alpha:g}")
        if bad:
            return (f"gate: FAIL: {len(bad)} of {len(gated)} gated comparisons changed beyond "
                    f"their threshold and significantly; {what}")
        if unsure and self.sequential:
            return (f"gate: UNSURE: {len(unsure)} of {len(gated)} gated comparisons not decided "
                    f"({unsure[0].inconclusive}); {what}")
        if unsure:
            return (f"gate: UNSURE: {len(unsure)} of {len(gated)} gated comparisons could not have "
                    f"seen a change at their threshold ({unsure[0].inconclusive}); {what}")
        if self.sequential:
            return (f"gate: pass: every gated threshold ruled out by its repeated interval (no change "
                    f"beyond it); {what}")
        return (f"gate: pass: none of {len(gated)} gated comparisons changed beyond its threshold "
                f"significantly; {what}")

    def as_dict(self) -> dict[str, Any]:
        return {"baseline": self.baseline, "baseline_campaign": self.compare.a,
                "campaign": self.compare.b, "study": self.compare.study_b,
                "alpha": self.compare.alpha, "failed": self.failed,
                "inconclusive": self.inconclusive, "exit_status": self.exit_status,
                "summary": self.summary, "holm_family": self.family,
                "hosts": {"baseline": self.hosts[0], "campaign": self.hosts[1]},
                "lines": [ln.as_dict() for ln in self.lines], "warnings": self.warnings,
                "unmatched_baseline": self.compare.unmatched_a,
                "unmatched_campaign": self.compare.unmatched_b,
                **({"sequential": self.sequential} if self.sequential else {})}
