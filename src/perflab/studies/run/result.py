"""What `perflab run` found: one Benchmark per command x parameter combination, and its verdict."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

from perflab.model import RunResult
from perflab.studies.base import decode
from perflab.stats.interval import CI


class Run(NamedTuple):
    """One stored run as analyse() reads it (a store Measurement has the same attributes)."""

    label: str
    params: dict
    rep: int
    result: RunResult


@dataclass
class Benchmark:
    """One command with one parameter combination: its successful runs and their statistics."""

    command: str
    params: dict[str, str]
    times: list[float] = field(default_factory=list)  # wall seconds of the successful runs
    user: list[float] = field(default_factory=list)
    system: list[float] = field(default_factory=list)
    maxrss_kb: list[int] = field(default_factory=list)
    rusage: dict[str, list[int]] = field(default_factory=dict)  # minflt, majflt, nvcsw, nivcsw
    metrics: dict[str, list[float | None]] = field(default_factory=dict)  # per successful run
    counters: dict[str, list[float | None]] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)  # why runs failed -> how many
    suspect: int = 0
    summary: dict[str, Any] | None = None  # n (a count), mean, median, stddev, min, max, q1, q3 (floats)
    median_ci: dict[str, float] | None = None  # {"low", "high", "level"}
    outliers: list[int] = field(default_factory=list)
    # the ranked measure against the reference's: {"ratio", "low", "high", "level", "target",
    # "significant", "reference", "verdict"} (verdict: slower, faster, better, worse or None)
    relative: dict | None = None
    energy: dict | None = None  # EnergySummary.as_dict(): J/run, J/event with CIs (None: not measured)
    # two speeds of the ranked measure (stats.modes.Modes.as_dict() and "measure"); None: one
    modes: dict | None = None
    series: dict | None = None  # SeriesSummary.as_dict() (studies/run/series.py); None: no series

    @property
    def n(self) -> int:
        return len(self.times)

    @property
    def failed(self) -> int:
        return sum(self.failures.values())

    def metric_medians(self) -> dict[str, float]:
        return _medians(self.metrics)

    def counter_medians(self) -> dict[str, float]:
        return _medians(self.counters)


def _median(b: Benchmark, measure: str) -> float | None:
    if measure == "wall time":
        return b.summary["median"] if b.summary else None
    return b.metric_medians().get(measure)


def _medians(values: dict[str, list[float | None]]) -> dict[str, float]:
    out = {}
    for name, vals in values.items():
        present = [v for v in vals if v is not None]
        if present:
            out[name] = statistics.median(present)
    return out


@dataclass
class RunStudyResult:
    """The outcome of `perflab run`: one Benchmark per command x parameter combination."""

    benchmarks: list[Benchmark]
    warnings: list[str] = field(default_factory=list)
    stopped_by: str = "runs"  # "runs", "precision", "max-runs", "max-time", "time-budget"; "decided", "budget"
    campaign_id: int | None = None
    health: dict = field(default_factory=dict)  # governor, turbo, runs sampled, medians of the runs' health
    instrument: dict = field(default_factory=dict)  # a simulated instrument's section (studies/instrument.py)
    ranking: dict = field(default_factory=dict)  # {"measure", "higher_is_better", "reference"}
    # the named workload whose events `perflab profile --event N` can window (its output has the
    # "start/done processing event #N" lines the profile's window opens on); None: not one
    workload: str | None = None
    sequential: dict | None = None  # --until-decided: the design, its looks, decided or the runs it needs

    @property
    def reference(self) -> Benchmark | None:
        """The benchmark the others were compared with (None: nothing was compared)."""
        return next((b for b in self.benchmarks if b.relative and b.relative.get("reference")), None)

    @property
    def measure(self) -> str:
        return self.ranking.get("measure") or "wall time"

    @property
    def higher_is_better(self) -> bool:
        return bool(self.ranking.get("higher_is_better"))

    @property
    def fastest(self) -> Benchmark | None:
        """The best median of the ranked measure in its direction (lowest wall time without a
        metric); a point estimate, not a test: the verdict's comparisons are with the reference."""
        ok = [(b, _median(b, self.measure)) for b in self.benchmarks if b.summary]
        measured = [(b, m) for b, m in ok if m is not None]
        if not measured:
            return None
        pick = max if self.higher_is_better else min
        return pick(measured, key=lambda bm: bm[1])[0]

    @property
    def failed_runs(self) -> int:
        return sum(b.failed for b in self.benchmarks)

    @property
    def suspect_runs(self) -> int:
        return sum(b.suspect for b in self.benchmarks)

    def as_dict(self) -> dict:
        fastest = self.fastest
        # Shallow: dataclasses.asdict deep-copies every list of times (50 ms for 2000 runs).
        benches = [{f.name: getattr(b, f.name) for f in fields(b)} for b in self.benchmarks]
        ref = self.reference
        return dict(campaign_id=self.campaign_id, benchmarks=benches,
                    warnings=self.warnings, stopped_by=self.stopped_by, ranking=self.ranking,
                    reference=ref.command if ref else None,
                    fastest=fastest.command if fastest else None, failed_runs=self.failed_runs,
                    suspect_runs=self.suspect_runs, health=self.health, instrument=self.instrument,
                    workload=self.workload, sequential=self.sequential, verdict=verdict(self))

    @classmethod
    def from_dict(cls, d: dict) -> "RunStudyResult":
        # a summary without benchmarks (a failed campaign's error alone) is no run result: KeyError
        d["benchmarks"]
        return decode(cls, d)  # what as_dict adds (fastest, verdict, ...) names no field


def too_few_runs(relative: dict) -> bool:
    """A comparison whose interval could not reach the level it needed (too few runs to tell)."""
    return relative["level"] < relative.get("target", 0) - 1e-9


def verdict(result: RunStudyResult) -> str:
    """One sentence: the reference's median and CI, how each other command compares with it in the
    ranked measure, and what a comparison across two speeds rests on."""
    ok = [b for b in result.benchmarks if b.summary]
    if not ok:
        return "every run failed: no timing to report."
    ref = result.reference or ok[0]
    assert ref.summary and ref.median_ci
    ci = CI.from_dict(ref.median_ci)
    interval = f"{ci.label()} {ci.low:.3g}..{ci.high:.3g} s" if ci.level > 0 else "no CI"
    runs = f"{ref.n} run" + ("s" if ref.n != 1 else "")
    text = f"{ref.command}: median {ref.summary['median']:.3g} s ({interval}, {runs})"
    measure = result.measure
    if measure != "wall time":
        value = _median(ref, measure)
        text += f", {measure} {value:.4g}" if value is not None else f", {measure} not measured"
    else:
        rate = ref.metric_medians().get("events_per_s")
        if rate is not None:
            text += f", {rate:.3g} events/s"
    # Any: every one of them holds a `relative` (the filter), which mypy cannot carry through a list.
    rest: list[Any] = [b for b in ok if b is not ref and b.relative]
    if rest:
        text += f"; {ranked_by(result)}; against it ({level_text(rest[0].relative['target'])} intervals, " \
                f"Bonferroni over {len(rest)}, 5 % family-wise)"
        for word in ("slower", "faster", "better", "worse"):
            hits = [f"{b.command} {b.relative['ratio']:.3g}x [{b.relative['low']:.3g}, "
                    f"{b.relative['high']:.3g}]" for b in rest if b.relative.get("verdict") == word]
            if hits:
                text += f", {word}: " + "; ".join(hits)
        seq = None if (result.sequential or {}).get("gate") else result.sequential  # the gate's looks: see its line
        ruled_out = [b.command for b in rest if b.relative.get("decision") == "within"]
        if ruled_out:
            m = rest[0].relative["min_effect"]
            text += f", no change of {100 * m:g} % or more: {', '.join(ruled_out)} (the interval lies inside ±{100 * m:g} %)"
        few = [b.command for b in rest if too_few_runs(b.relative) and b.command not in ruled_out]
        open_ = [b.command for b in rest if b.relative.get("undecided") and b.command not in few + ruled_out]
        same = [b.command for b in rest if not b.relative.get("significant") and b.command not in few + open_ + ruled_out]
        if seq and same:
            text += f", cannot tell within the budget: {', '.join(same)}" if seq.get("final") else \
                f", not decided yet: {', '.join(same)}"
            same = []
        if open_:
            text += (f", cannot be told from it: {', '.join(open_)} (one ran at one speed between the "
                     "other's two: a difference cannot be told from a change of speed)")
        if few:
            text += f", too few runs to tell from it: {', '.join(few)} (no interval reaches the level needed)"
        if same:
            m = rest[0].relative.get("min_effect", 0.01)
            text += (f", not shown to differ from it: {', '.join(same)} (Mann-Whitney's interval "
                     f"holds 1, or the difference is under {100 * m:g} %; this does not show they are equal: "
                     "--until-decided runs until it tells)")
    within = [b for b in rest if b.relative.get("speeds")]
    for b in within:
        text += f"; {b.command}: {b.relative['speeds']}"
    two: list[Any] = [b for b in ok if b.modes]  # each with its `modes`, as `rest` above
    if two:
        speeds = "; ".join(f"{b.command} " + ", ".join(
            f"{m['share']:.0%} at {m['center']:.3g}" for m in b.modes["modes"]) for b in two)
        text += (f"; two speeds ({speeds}): its median rests on the mix of speeds in these runs, "
                 "which the machine chose, not the command"
                 + (", the comparisons do not: they are made within each speed" if within else ""))
    if result.sequential:
        text += "; " + sequential_line(result)
    failed = [b.command for b in result.benchmarks if not b.summary]
    if failed:
        text += f"; every run of {', '.join(failed)} failed"
    if result.suspect_runs:
        text += f"; {result.suspect_runs} runs suspect (machine disturbed)"
    return text + "."


def sequential_line(result: RunStudyResult) -> str:
    """--until-decided: the design, and where it stopped: decided at a look, or the budget spent
    with the runs (and time at this run's pace) that would decide it."""
    q = result.sequential or {}
    design = q.get("looks") or [{}]
    last = design[-1]
    if q.get("gate"):
        return gate_line(q)
    head = (f"measured until decided: {q.get('design', 'alpha spending')}, "
            f"{q.get('alpha', 0.05):.0%} over all looks")
    if q.get("decided"):
        return (f"{head}; every comparison decided at look {len(design)} ({last.get('runs')} runs each, "
                f"budget {q.get('budget')})")
    if not q.get("final"):
        return f"{head}; stopped at look {len(design)} ({last.get('runs')} runs each) before a decision"
    need = q.get("needs_runs")
    return (f"{head}; cannot tell within the budget ({last.get('runs')} runs each): about {need} runs "
            f"each would decide it (~{duration(q.get('needs_s') or 0.0)} at this machine's pace; "
            f"--until-decided --max-runs {need})")


def gate_line(q: dict) -> str:
    """--until-decided with --baseline: the design, and where the looks stopped: the gate decided
    (a regression shown, or every threshold ruled out), or the budget spent with the runs (and time
    at this run's pace) that would decide it, or the baseline too thin for any number of runs."""
    looks_ = q.get("looks") or [{}]
    k, runs = len(q.get("comparisons") or ()), looks_[-1].get("runs")
    head = (f"measured until the gate decided against baseline '{q['gate']}': O'Brien-Fleming-type alpha "
            f"spending at the information fraction against its fixed runs, {q.get('alpha', 0.05):.0%} over all "
            f"looks and the {k} gated comparison{'s' * (k != 1)}")
    if q.get("comparisons") and all(c.get("campaign") for c in q["comparisons"]):
        return (f"{head}; stopped at the first look ({runs} runs): the baseline's saves measure the drift "
                "between campaigns, so the gate takes the campaign as the unit, which more runs of this one "
                "do not narrow (the gate's fixed rules decide)")
    if q.get("failed"):
        return f"{head}; a regression shown at look {len(looks_)} ({runs} runs)"
    if q.get("decided"):
        return f"{head}; every threshold decided at look {len(looks_)} ({runs} runs, budget {q.get('budget')})"
    if not q.get("final"):
        return f"{head}; stopped at look {len(looks_)} ({runs} runs) before a decision"
    if q.get("baseline_too_few"):
        m = min(c["n_a"] for c in q["comparisons"] if not c["decision"])
        return (f"{head}; cannot tell within the budget ({runs} runs), and no number of new runs would: the "
                f"baseline's {m} runs leave the interval too wide; save a baseline with more runs (--runs N)")
    need = q.get("needs_runs")
    return (f"{head}; cannot tell within the budget ({runs} runs): about {need} runs would decide it "
            f"(~{duration(q.get('needs_s') or 0.0)} at this machine's pace; --until-decided --max-runs {need})")


def level_text(level: float) -> str:
    """'96.9%', '99.97%': a look's level with the digits that tell it from 100 %."""
    digits = 1
    while digits < 6 and round(100 * level, digits) >= 100:
        digits += 1
    return f"{100 * level:.{digits}f}%"


def duration(seconds: float) -> str:
    """'40 s', '3.2 min', '1.5 h'."""
    if seconds < 100:
        return f"{seconds:.2g} s" if seconds < 10 else f"{seconds:.0f} s"
    if seconds < 6000:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def ranked_by(result: RunStudyResult) -> str:
    """'ranked by wall time (lower is better)' or by the primary metric in its direction."""
    return (f"ranked by {result.measure} "
            f"({'higher' if result.higher_is_better else 'lower'} is better)")


def health_summary(results: list[RunResult]) -> dict:
    """What the runs' health says overall: governor and turbo as recorded, medians, maxima."""
    sampled: list[dict[str, Any]] = [r.health for r in results if r.health]
    if not sampled:
        return {}
    out: dict = {"runs": len(sampled), "suspect": sum(bool(r.suspect) for r in results)}
    for key in ("governor", "turbo"):
        seen = {str(h[key]) for h in sampled if key in h}
        if seen:
            out[key] = ", ".join(sorted(seen))
    for key in ("cpu_pressure", "steal", "runnable_others"):
        vals = [h[key] for h in sampled if key in h]
        if vals:
            out[f"{key}_median"] = statistics.median(vals)
            out[f"{key}_max"] = max(vals)
    throttles = sum(h.get("throttle", 0) for h in sampled)
    if throttles:
        out["throttle_events"] = throttles
    return out
