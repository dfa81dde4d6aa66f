"""What the variants study found: one Comparison per measured quantity, per variant, and the verdict."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from perflab.kernels.variants import VariantBuild
from perflab.stats.interval import CI
from perflab.studies.base import decode
from perflab.studies.run.result import duration, level_text

LABELS = {"wall_s": "elapsed", "maxrss_kb": "max RSS", "energy_j": "energy"}


@dataclass(frozen=True)
class Estimate:
    """A median with its order-statistic interval (and that interval's real level)."""

    median: float
    ci: CI

    def as_dict(self) -> dict:
        return {"median": self.median, "ci": self.ci.as_dict()}

    @classmethod
    def from_dict(cls, d: dict) -> "Estimate":
        return decode(cls, d)


@dataclass(frozen=True)
class Comparison:
    """One quantity of one variant against the baseline, paired by round: ratio, CI, Holm p, Cliff's delta."""

    quantity: str
    ratio: float  # variant / baseline
    ci: CI
    p_raw: float  # two-sided Wilcoxon signed-rank on the per-round log ratios
    p: float  # Holm-adjusted across the variants, for this quantity
    effect: float  # Cliff's delta, variant vs baseline
    significant: bool
    higher_is_better: bool
    pairs: int = 0  # rounds paired: both ran successfully (and, under two speeds, at one speed)
    speeds: str = ""  # stats.speeds.paired_line where rounds across two speeds were left out
    # --until-decided: the interval is a repeated one at the look's level (p is then Wilcoxon's
    # raw p, for reference); decision 'larger', 'smaller', 'within' (no change of min_effect or
    # more) or '' (cannot tell); stats.sequential.decide
    sequential: bool = False
    decision: str = ""
    min_effect: float = 0.0

    @property
    def better(self) -> bool | None:
        """True/False when the difference is significant, None when it is not."""
        return None if not self.significant else (self.ratio > 1) == self.higher_is_better

    def evidence(self) -> str:
        """'Holm p=0.003', or at a look of --until-decided 'alpha spent over the looks'."""
        return "alpha spent over the looks" if self.sequential else f"Holm p={self.p:.2g}"

    def label(self) -> str:
        """'95% CI', or at a look of --until-decided '99.2% repeated CI'."""
        return f"{level_text(self.ci.level)} repeated CI" if self.sequential else self.ci.label()

    def text(self) -> str:
        """'events_per_s +3.1 % [+1.2 %, +5.0 %] (95% CI), faster (Holm p=0.003)'."""
        if self.sequential and self.better is None:
            word = f"no change of {self.min_effect:.0%} or more" if self.decision == "within" else "cannot tell"
        elif self.better is None:
            word = "no significant difference"
        elif self.quantity == "maxrss_kb":
            word = "less memory" if self.better else "more memory"
        elif self.quantity == "energy_j":
            word = "less energy" if self.better else "more energy"
        else:
            word = "faster" if self.better else "slower"
        return (f"{LABELS.get(self.quantity, self.quantity)} {pct(self.ratio)} [{pct(self.ci.low)}, "
                f"{pct(self.ci.high)}] ({self.label()}), {word} ({self.evidence()})"
                + (f"; {self.speeds}" if self.speeds else ""))

    def as_dict(self) -> dict:
        d = asdict(self)
        d["ci"] = self.ci.as_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Comparison":
        return decode(cls, d)


def pct(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.1f} %"


@dataclass
class BuildInfo:
    """How a variant was built (or why it was not): cache, program, section sizes, notes."""

    cached: bool | None = None
    path: str = ""
    sizes: dict | None = None  # text, data, bss in bytes
    notes: list[str] = field(default_factory=list)
    skipped: str = ""  # the one-line reason this variant cannot be built or run here
    log_path: str | None = None

    @classmethod
    def of(cls, build: VariantBuild | str) -> "BuildInfo":
        if isinstance(build, str):
            return cls(skipped=build)
        sizes = asdict(build.sizes) if build.sizes is not None else None
        return cls(build.cached, str(build.path), sizes, list(build.notes), "", build.log_path)


@dataclass
class VariantOutcome:
    """One variant: its runs, medians, checksum, comparisons with the baseline and verdict."""

    name: str
    flags: str
    status: str = ""  # baseline, measured, different result, failed, skipped, not run
    build: BuildInfo = field(default_factory=BuildInfo)
    n_ok: int = 0
    failures: dict[str, int] = field(default_factory=dict)  # why runs failed -> how many
    estimates: dict[str, Estimate] = field(default_factory=dict)
    comparisons: dict[str, Comparison] = field(default_factory=dict)
    checksum: float | None = None
    notes: list[str] = field(default_factory=list)
    verdict: str = ""
    energy: dict | None = None  # EnergySummary.as_dict(): J/run, J/event with CIs (None: not measured)
    counts: dict[str, float] = field(default_factory=dict)  # simulated count -> median (--instrument)
    count_comparisons: dict[str, Comparison] = field(default_factory=dict)  # against the baseline

    @property
    def n_failed(self) -> int:
        return sum(self.failures.values())

    def as_dict(self) -> dict:
        d = asdict(self)
        d["estimates"] = {k: e.as_dict() for k, e in self.estimates.items()}
        d["comparisons"] = {k: c.as_dict() for k, c in self.comparisons.items()}
        d["count_comparisons"] = {k: c.as_dict() for k, c in self.count_comparisons.items()}
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "VariantOutcome":
        return decode(cls, d)


@dataclass
class VariantsResult:
    baseline: str
    primary: str  # the quantity "fastest" is judged on: the workload's metric, else elapsed
    level: float
    alpha: float
    rounds: int
    checksum_metric: str | None
    variants: list[VariantOutcome]
    order: list[list[str]]  # the variants of each measured round, in the order they ran
    fastest: str | None = None
    verdict: str = ""
    caveat: str = ""
    campaign_id: int | None = None
    higher_is_better: bool = False  # the primary quantity's direction
    ranking: str = ""  # what "fastest" is judged on, in which direction, and why that quantity
    # Among several variants better than the baseline: the leader (best point estimate) against
    # each other one, paired by round, Holm over them; the leader is named only if it beats all.
    leader: str | None = None
    contest: dict[str, Comparison] = field(default_factory=dict)  # rival -> leader vs rival
    tied: list[str] = field(default_factory=list)  # leader and the rivals it does not beat
    instrument: str = ""  # "cachegrind": each variant also ranked by simulated counts
    cache_model: str = ""  # the caches simulated (platform/cache_model.py)
    count_ranking: dict[str, list[str]] = field(default_factory=dict)  # count -> variants, fewest first
    disagreements: list[str] = field(default_factory=list)  # where counts and time point opposite ways
    rounds_needed: int | None = None  # compared within two speeds, none named: the rounds that would see 2 %
    # --until-decided: the design and where it stopped (studies/run/looks.Plan.as_dict), the margin
    sequential: dict | None = None
    min_effect: float = 0.0
    stopped_by: str = ""

    def row(self, name: str) -> VariantOutcome:
        return next(v for v in self.variants if v.name == name)

    def as_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["variants"] = [v.as_dict() for v in self.variants]
        d["contest"] = {k: c.as_dict() for k, c in self.contest.items()}
        return {"study": "variants", **d}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "VariantsResult":
        return decode(cls, d)  # "study", which as_dict adds, names no field


def candidates(result: VariantsResult) -> list[VariantOutcome]:
    """Variants significantly better than the baseline on the primary quantity, same result."""
    return [o for o in result.variants if o.status == "measured"
            and o.comparisons.get(result.primary) is not None and o.comparisons[result.primary].better]


def leader_of(result: VariantsResult, cands: list[VariantOutcome]) -> VariantOutcome:
    """The candidate with the best point estimate against the baseline, in the primary's direction."""
    pick = max if result.higher_is_better else min
    return pick(cands, key=lambda o: o.comparisons[result.primary].ratio)


def _variant_verdict(o: VariantOutcome, primary: str) -> str:
    if o.status in ("skipped", "not run"):
        return o.build.skipped or "not run"
    if o.status == "failed":
        return "every run failed: " + ", ".join(f"{n}x {why}" for why, n in o.failures.items())
    keys = [primary] + [q for q in ("wall_s", "maxrss_kb", "energy_j") if q != primary]
    parts = [o.comparisons[q].text() for q in keys if q in o.comparisons]
    if o.status == "different result":
        parts.insert(0, "DIFFERENT RESULT (checksum differs)")
    if o.n_failed:
        parts.append(f"{o.n_failed} run(s) failed and were left out: "
                     + ", ".join(f"{n}x {why}" for why, n in o.failures.items()))
    return "; ".join(parts)


def verdicts(result: VariantsResult) -> None:
    """Fill each variant's verdict, the fastest variant (same result only) and the study's verdict."""
    for o in result.variants:
        o.verdict = "baseline" if o.status == "baseline" else _variant_verdict(o, result.primary)
    base = result.row(result.baseline)
    if base.status == "failed":
        result.verdict = f"the baseline '{base.name}' failed in every run: no comparison ({base.verdict})"
        result.caveat = "Fix the baseline's runs (see its failures) and run the study again."
        return
    better = [o for o in result.variants if o.comparisons.get(result.primary) is not None
              and o.comparisons[result.primary].better]
    same = candidates(result)
    label = LABELS.get(result.primary, result.primary)
    n_cmp = sum(1 for o in result.variants if result.primary in o.comparisons)
    result.fastest, result.tied = None, []
    if same:
        lead = result.row(result.leader) if result.leader else leader_of(result, same)
        beats = {n: c for n, c in result.contest.items() if c.better}
        c = lead.comparisons[result.primary]
        against = (f"{label} {pct(c.ratio)} [{pct(c.ci.low)}, {pct(c.ci.high)}] ({c.label()}) against "
                   f"{base.name}, {c.evidence()}")
        rivals = [o.name for o in result.variants if o.status == "measured" and o.name != lead.name]
        if all(n in beats for n in rivals):
            result.fastest = lead.name
            result.verdict = f"fastest: {lead.name} ({lead.flags}), {against}"
            if beats:
                result.verdict += ("; better than each other variant (paired by "
                                   f"round, Holm over {len(beats)}): " + ", ".join(
                                       f"{n} ({pct(k.ratio)}, {k.evidence()})" for n, k in beats.items()))
        else:
            result.tied = [lead.name] + [n for n in rivals if n not in beats]
            close = ", ".join(f"{lead.name} vs {n} {pct(k.ratio)} [{pct(k.ci.low)}, {pct(k.ci.high)}] "
                              f"({k.label()}), {k.evidence()}"
                              for n, k in result.contest.items() if n not in beats)
            result.verdict = (f"tie for fastest: {', '.join(result.tied)} ({lead.name} is faster than "
                              f"{base.name} but not significantly better than the others, paired by round, Holm over "
                              f"{len(result.contest)}: {close}); best estimate {lead.name}, {against}")
    elif result.sequential is not None:
        result.verdict = _undecided_verdict(result, base.name, label)
    else:
        result.verdict = (f"no variant is faster than {base.name} with significance ({label}, Wilcoxon "
                          f"signed-rank paired by round, Holm across {n_cmp} variant(s), alpha {result.alpha:g}, {result.rounds} rounds)")
    # Wilcoxon's smallest two-sided p with n pairs is 2 / 2^n; Holm multiplies it by the variants
    if result.sequential is None and n_cmp and 2.0 / 2 ** result.rounds * n_cmp >= result.alpha:
        need = next(n for n in range(2, 64) if 2.0 / 2 ** n * n_cmp < result.alpha)
        result.verdict += (f"; with {result.rounds} rounds and {n_cmp} variant(s) no difference can reach "
                           f"significance (smallest Holm p {2.0 / 2 ** result.rounds * n_cmp:.2g}): "
                           f"use --rounds {need} or more")
    excluded = [o.name for o in better if o.status == "different result"]
    if excluded:
        result.verdict += f"; not named though faster, because the result differs: {', '.join(excluded)}"
    slower = [f"{o.name} ({label} {pct(o.comparisons[result.primary].ratio)})" for o in result.variants
              if o.comparisons.get(result.primary) is not None and o.comparisons[result.primary].better is False]
    if slower:
        result.verdict += f"; slower than {base.name}: {', '.join(slower)}"
    smaller = [f"{o.name} (max RSS {pct(o.comparisons['maxrss_kb'].ratio)})" for o in result.variants
               if o.comparisons.get("maxrss_kb") is not None and o.comparisons["maxrss_kb"].better]
    if smaller:
        result.verdict += f"; less memory: {', '.join(smaller)}"
    bad = [o.name for o in result.variants if o.status in ("failed", "skipped", "not run")]
    if bad:
        result.verdict += f"; not compared: {', '.join(bad)}"
    if result.ranking:
        result.verdict += f"; ranked by {result.ranking}"
    if result.sequential is not None:
        result.verdict += "; " + sequential_line(result)
    result.caveat = (
        "This says which build ran faster on this machine, with this input and compiler; another CPU, "
        "input or compiler can rank the builds differently. An equal checksum shows equal output for "
        "this input only" + ("" if result.checksum_metric else "; no checksum was checked") + "."
    )


def _undecided_verdict(result: VariantsResult, base: str, label: str) -> str:
    """--until-decided, no variant shown faster: the builds ruled out at the margin and those it
    cannot tell, never "no difference" on undecided evidence."""
    within = [o.name for o in result.variants if (c := o.comparisons.get(result.primary)) is not None
              and c.decision == "within"]
    open_ = [o.name for o in result.variants if (c := o.comparisons.get(result.primary)) is not None
             and not c.decision]
    parts = []
    if within:
        parts.append(f"no change of {result.min_effect:.0%} or more against {base} ({label}): {', '.join(within)}")
    if open_:
        parts.append(f"cannot tell whether faster or slower than {base} by {result.min_effect:.0%}: {', '.join(open_)}")
    return "; ".join(parts) or f"no variant faster than {base} by {result.min_effect:.0%} or more"


def sequential_line(result: VariantsResult) -> str:
    """--until-decided: the design, and where it stopped: decided at a look, or the budget spent
    with the rounds (and time at this campaign's pace) that would decide it."""
    q = result.sequential or {}
    design = q.get("looks") or [{}]
    rounds = design[-1].get("runs")
    head = (f"measured until decided: {q.get('design', 'alpha spending')}, {q.get('alpha_each', 0.05):.2%} "
            f"a build over all looks (Bonferroni over the builds)")
    if q.get("decided"):
        return f"{head}; every build decided at look {len(design)} ({rounds} rounds, budget {q.get('budget')})"
    if not q.get("final"):
        return f"{head}; stopped at look {len(design)} ({rounds} rounds) before a decision"
    need = q.get("needs_runs")
    return (f"{head}; cannot tell within the budget ({rounds} rounds): about {need} rounds would decide it "
            f"(~{duration(q.get('needs_s') or 0.0)} at this campaign's pace; --until-decided --max-runs {need})")
