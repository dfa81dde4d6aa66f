"""The value `perflab compare` returns: one row per measure and point, and the verdict drawn from them.

The terminal table, the verdict sentence, the JSON and the HTML page all read this one value
(studies/compare/study.py builds it), so they cannot disagree.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from perflab.stats import judge
from perflab.studies.compare import counted as counting
from perflab.studies.compare.keys import measure_title

DRIFT = ("one campaign a side: a difference may be drift between campaigns; replicate "
         "(perflab compare 3,4,5 8,9,10)")


@dataclass
class CompareRow:
    """One measure of one design point: A's and B's medians, B/A with its CI, the test."""

    key: str
    measure: str
    n_a: int
    n_b: int
    median_a: float
    median_b: float
    ratio: float
    lo: float
    hi: float
    p_value: float
    p_adjusted: float = 1.0
    significant: bool = False
    better: str = ""  # "A", "B" or "" (not significant, or no declared direction)
    level: float = 0.95  # confidence level of [lo, hi], the one it really has
    overall: bool = False  # across every matched point (van Elteren), not one point
    alpha_used: float = 0.05  # what p_adjusted was held against (alpha/2 in two families)
    min_effect: float = 0.0  # the CI must lie outside [1 - min_effect, 1 + min_effect]
    direction: bool | None = None  # higher is better (None: the campaign declares none)
    modes_a: Any = None  # stats.modes.Modes where A has two speeds
    modes_b: Any = None
    counted: bool = False  # judged as a count (judge.counted_test), not by ranks
    detectable: float | None = None  # smallest change seen at 80 % power (replicate campaigns)
    speeds: Any = None  # stats.speeds.WithinSpeeds where compared within two speeds
    blind: bool = False  # the rank test's smallest p at these runs cannot pass its Holm step
    runs_needed: int | None = None  # runs a side that would tell (blind rows), at the observed spread
    spread: float = 0.0  # pooled SD of the log runs about each side's median (judge.log_spread)

    @property
    def untested(self) -> bool:
        """Equal constant counts on both sides: known to be the same, no test made."""
        return self.counted and self.lo == self.hi == 1.0

    @property
    def ci_text(self) -> str:
        """'[0.9920, 1.0266] 67%', or 'exact' where both sides are constant counts."""
        return f"[{self.lo:.4f}, {self.hi:.4f}] " + ("exact" if self.level == 1.0 else f"{100 * self.level:.0f}%")

    @property
    def change(self) -> float:
        """Relative change B/A - 1."""
        return self.ratio - 1.0

    @property
    def bimodal(self) -> bool:
        return self.modes_a is not None or self.modes_b is not None

    @property
    def verdict_cell(self) -> str:
        """'A better', 'B better', 'B higher' (no declared direction), 'same'; '2 speeds' added."""
        if self.untested:
            text = "same (equal counts)"
        elif not self.significant and self.blind:
            text = "cannot tell"
        elif not self.significant:
            text = "same"
        elif self.better:
            text = f"{self.better} better"
        else:
            text = "B higher" if self.ratio > 1 else "B lower"
        return text + (", 2 speeds" if self.bimodal else "")

    def modes_text(self) -> str:
        """'A: 2 modes: 0.05 (60% of runs), 0.08 (40%); B: one speed' where a side has two."""
        def side(m: Any) -> str:
            return m.line() if m is not None else "one speed"
        return f"A: {side(self.modes_a)}; B: {side(self.modes_b)}"

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "measure": self.measure, "measure_title": measure_title(self.measure),
                "n_a": self.n_a, "n_b": self.n_b, "median_a": self.median_a,
                "median_b": self.median_b, "ratio": self.ratio,
                "ci": {"low": self.lo, "high": self.hi, "level": self.level},
                "p_value": self.p_value, "p_adjusted": self.p_adjusted, "alpha_used": self.alpha_used,
                "min_effect": self.min_effect, "significant": self.significant, "better": self.better,
                "counted": self.counted, "tested": not self.untested, "detectable": self.detectable,
                "higher_is_better": self.direction, "verdict": self.verdict_cell, "overall": self.overall,
                "modes_a": self.modes_a.as_dict() if self.modes_a is not None else None,
                "modes_b": self.modes_b.as_dict() if self.modes_b is not None else None,
                "speeds": self.speeds.as_dict() if self.speeds is not None else None,
                "blind": self.blind, "runs_needed": self.runs_needed}


@dataclass
class CompareResult:
    a: int
    b: int
    study_a: str
    study_b: str
    alpha: float = 0.05
    rows: list[CompareRow] = field(default_factory=list)
    unmatched_a: list[str] = field(default_factory=list)
    unmatched_b: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    min_effect: float = 0.0
    primary: str = "wall_s"  # the measure the headline is about: the primary metric, or wall time
    counted_min_effect: float = 0.0  # the band of counted rows (CompareConfig)
    campaigns_a: tuple[int, ...] = ()  # every campaign of each side (more than one: replicated)
    campaigns_b: tuple[int, ...] = ()

    @property
    def replicated(self) -> bool:
        return len(self.campaigns_a) > 1

    def _side(self, which: str, word: bool = True) -> str:
        """'campaign 3', 'campaigns 3,4,5' (or without the word: '8', '8,9,10')."""
        ids = (self.campaigns_a or (self.a,)) if which == "a" else (self.campaigns_b or (self.b,))
        prefix = ("campaigns " if len(ids) > 1 else "campaign ") if word else ""
        return prefix + ",".join(map(str, ids))

    @property
    def headline(self) -> CompareRow | None:
        """The largest significant change in the primary measure (None when there is none)."""
        sig = [r for r in self.rows if r.significant and r.measure == self.primary]
        return max(sig, key=lambda r: abs(math.log(r.ratio)), default=None)

    @property
    def cannot_tell(self) -> list[CompareRow]:
        """The primary measure's rows that could not have shown a change, where none differs:
        the answer is "cannot tell" (exit 3), not "no difference"."""
        prim = [r for r in self.rows if r.measure == self.primary]
        if any(r.significant for r in self.rows) or not prim or not all(r.blind for r in prim):
            return []
        return prim

    @property
    def verdict(self) -> str:
        if not self.rows:
            return f"{self._side('a')} and {self._side('b', False)} share no measurement to compare."
        sig = [r for r in self.rows if r.significant]
        band = f" by more than {100 * self.min_effect:g} %" if self.min_effect else ""
        if any(r.counted for r in sig) and self.counted_min_effect != self.min_effect:
            counts = (f"by more than {100 * self.counted_min_effect:g} %" if self.counted_min_effect
                      else "by any amount")
            band = f" (counts {counts}{', times' + band if band else ''})"
        what = measure_title(self.primary)
        top = self.headline
        if top is not None:
            text = (f"{what} of {top.key} is {100 * top.change:+.1f} % in B ({self._side('b')}): "
                    f"{_judgement(top)}, {counting.ci_words(top.ratio, top.lo, top.hi, top.level)}; "
                    f"{len(sig)} of {len(self.rows)} comparisons differ{band}.")
        elif self.cannot_tell:
            blind = self.cannot_tell
            worst = max(blind, key=lambda r: abs(math.log(r.ratio)))
            need = max((r.runs_needed or 0) for r in blind)
            text = (f"cannot tell whether {what} differs between {self._side('a')} and {self._side('b', False)}: "
                    f"with {worst.n_a} and {worst.n_b} runs a side the rank test's smallest p is "
                    f"{judge.min_p(worst.n_a, worst.n_b):.2g}, which cannot pass alpha {worst.alpha_used:g} "
                    f"(Holm over the comparisons), so the {100 * worst.change:+.1f} % of {worst.key} is neither "
                    f"shown nor ruled out; measure about {need} runs a side (perflab run --runs {need}).")
        elif sig:
            other = max(sig, key=lambda r: abs(math.log(r.ratio)))
            text = (f"no significant change in {what}{band}; {len(sig)} of {len(self.rows)} other "
                    f"comparisons differ, largest: {measure_title(other.measure)} of {other.key} "
                    f"{100 * other.change:+.1f} % in B ({_judgement(other)}).")
        else:
            text = (f"no significant difference{band} between {self._side('a')} and {self._side('b', False)} "
                    f"in {len(self.rows)} comparisons (Holm, alpha {self.alpha:g}); this does not "
                    "show they are equal, only that these runs cannot tell them apart.")
        two = top if top is not None and top.bimodal else next(
            (r for r in self.rows if r.measure == self.primary and r.bimodal), None)
        within = top if top is not None and top.speeds is not None else next(
            (r for r in self.rows if r.measure == self.primary and r.speeds is not None), None)
        if within is not None:
            named = f" has two speeds ({within.modes_text()});" if within.bimodal else ":"
            text += (f" {what} of {within.key}{named} {within.speeds.line()} (runs at each speed against "
                     "runs at the same speed; the mixture's median moves with the share of runs at "
                     "each speed, this comparison does not)"
                     + (f"; {within.speeds.undecided}" if within.speeds.undecided else "") + ".")
        elif two is not None:
            text += (f" {what} of {two.key} has two speeds ({two.modes_text()}): its median "
                     f"moves with the share of runs at each speed{_per_mode(two)}, so B/A rests on "
                     "which speed the runs hit as much as on the code.")
        if sig and not self.replicated:
            text += f" Caution: {DRIFT}."
        return text

    def as_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "study_a": self.study_a, "study_b": self.study_b,
                "alpha": self.alpha, "min_effect": self.min_effect, "primary": self.primary,
                "counted_min_effect": self.counted_min_effect,
                "campaigns_a": list(self.campaigns_a or (self.a,)), "campaigns_b": list(self.campaigns_b or (self.b,)),
                "verdict": self.verdict, "cannot_tell": bool(self.cannot_tell),
                "rows": [r.as_dict() for r in self.rows],
                "unmatched_a": self.unmatched_a, "unmatched_b": self.unmatched_b, "notes": self.notes}


def _judgement(r: CompareRow) -> str:
    if r.better:
        return f"{r.better} better"
    return "no declared direction for it (primary_metric and higher_is_better in perflab.toml)"


def _per_mode(r: CompareRow) -> str:
    """', fast speed B/A 1.02, slow speed B/A 0.99' where both sides have the same two speeds."""
    ma, mb = r.modes_a, r.modes_b
    if ma is None or mb is None:
        return ""
    fast, slow = mb.modes[0].center / ma.modes[0].center, mb.modes[1].center / ma.modes[1].center
    return (f"; speed by speed B/A is {fast:.3g} (lower mode) and {slow:.3g} (upper mode), "
            f"the upper mode holds {ma.modes[1].share:.0%} of A's runs and {mb.modes[1].share:.0%} of B's")
