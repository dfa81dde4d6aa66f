"""`perflab profile diff A B`: which functions account for the extra samples of the slower profile.

Seed 001's table ("major contributors to the additional runtime on core 8"). A side is a perf.data
file or a stored profile campaign (its recordings' folded profiles, kept with its runs). Both
sides must be recordings of the same perf event: the extra is in that event's unit (ms of
cpu-clock, Mcycles of cycles).

The test: with >= 3 recordings per side, each function's share of a recording's period is
compared between the sides by Welch's t-test (recordings of two runs are not pairs), and the
p-values are Holm-corrected over every function compared (those holding >= 0.5 % of the period,
at most 30), at alpha = 1 - level. A share is what a code change moves; the total period also
moves with the machine (drift between the two campaigns, two speeds, load), which scales every
function alike and leaves shares alone, so the total is shown but not tested; where the
recordings' totals show two speeds (stats.speeds, as run, compare and gate), each side's mean is
taken at the same mix of speeds (studies/profile/speeds.py) and the verdict says so. With fewer
recordings no test is possible: the table is descriptive, and the verdict says so in one line.
checks/profile_diff.py shows the false differences and the detection under checks/noise.py.

Two callgrind campaigns are diffed on counts instead (counts.diff_counts): each function's
exclusive Ir, B/A by Welch's t on log counts (exact where constant), Holm over the functions
tested, 2 recordings a side; checks/profile_counts.py is its harness.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from perflab.errors import PerflabError
from perflab.model import known_fields
from perflab.measure.window import WindowRecorder
from perflab.stats.comparison import holm
from perflab.store import Store
from perflab.measure.callgrind import Counts
from perflab.studies.profile.counts import (
    APPEARED, MIN_COUNT_RECORDINGS, MIN_COUNTED_SHARE, VANISHED, CountDiffRow, diff_counts, recorded_counts,
    spread, spread_text,
)
from perflab.studies.profile.parse import (
    DiffRow, Profile, aggregate, diff_profiles, mean_profile, profile_from_dict, read_samples,
)
from perflab.studies.profile.diff_flame import count_marks, differential, marks_of
from perflab.studies.base import decode
from perflab.studies.profile.speeds import standardised
from perflab.studies.profile.stacks import STACK_FIELDS, fold, parse_stacks

NAME = "profile_diff"
MIN_TEST_RECORDINGS = 3  # per side: Welch's t needs a variance on each side; 2 give 1 df
MIN_TESTED_SHARE = 0.005  # of the period (both sides pooled): rarer functions are a few samples
MAX_TESTED = 30  # functions compared, chosen by pooled share (not by their difference)

# Time events count ns of period; the others count occurrences (cycles, instructions, misses).
_TIME_EVENTS = ("cpu-clock", "task-clock")


def unit_of(event: str) -> str:
    """The unit of period / 1e6 for an event: ms for time events, Mcycles, else M<event>."""
    base = event.split(":")[0]
    if "/" in base:  # cpu/cycles/ (a PMU-qualified name)
        base = base.strip("/").split("/")[-1]
    if base in _TIME_EVENTS:
        return "ms"
    if base in ("cycles", "cpu-cycles", "cycles-t", "ref-cycles"):
        return "Mcycles"
    return f"M {base}"


@dataclass(frozen=True)
class ProfileDiffConfig:
    a: str  # perf.data path or stored profile campaign id
    b: str
    threshold: float = 0.01  # of the extra
    top: int = 15
    level: float = 0.95  # the test's alpha is 1 - level, family-wise over the functions (Holm)
    # callgrind: a change is called only where B/A's interval lies beyond 1 +- this (0: counts
    # are exact, so any change the test is sure of is real)
    min_effect: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ProfileDiffConfig":
        return cls(**known_fields(cls, d))


Config = ProfileDiffConfig


@dataclass
class FunctionTest:
    """One function's share of a recording's period on each side, Welch's p and Holm's."""

    symbol: str
    share_a: float  # mean over A's recordings
    share_b: float
    p: float
    p_holm: float
    differs: bool  # p_holm < alpha

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ProfileDiffResult:
    a_label: str = ""
    b_label: str = ""
    event: str = ""
    unit: str = ""
    a_period: float = 0.0  # per recording (mean)
    b_period: float = 0.0
    swapped: bool = False
    rows: list[DiffRow] = field(default_factory=list)
    n_recordings: tuple[int, int] = (0, 0)
    alpha: float = 0.05
    tests: list[FunctionTest] = field(default_factory=list)  # empty: no test was possible
    instrument: str = "perf"  # "callgrind": count_rows instead of rows and tests
    count_rows: list[CountDiffRow] = field(default_factory=list)  # shown: by |change|, at most top
    count_others: list[CountDiffRow] = field(default_factory=list)  # changed, appeared, vanished, not shown
    count_tested: int = 0  # functions in the Holm family
    min_effect: float = 0.0
    a_totals: list[float] = field(default_factory=list)  # callgrind: Ir of each recording
    b_totals: list[float] = field(default_factory=list)
    campaign_id: int | None = None
    # two speeds in the recordings' totals: the periods are means at the pooled mix of speeds
    # (studies/profile/speeds.py): its line, shares, recordings per speed, notes
    speeds: dict | None = None
    flame: dict | None = None  # both sides with stacks: B's tree with A's shares and the marks
    flame_only: list[str] = field(default_factory=list)  # frames on one side only, in words

    @property
    def extra_fraction(self) -> float:
        return (self.b_period - self.a_period) / self.a_period if self.a_period else 0.0

    @property
    def tested(self) -> bool:
        need = MIN_COUNT_RECORDINGS if self.instrument == "callgrind" else MIN_TEST_RECORDINGS
        return min(self.n_recordings) >= need

    @property
    def test_note(self) -> str:
        """How the functions were tested, or the one line that says no test was possible."""
        na, nb = self.n_recordings
        if self.instrument == "callgrind":
            return self._count_test_note()
        if not self.tested:
            return (f"no test possible: {na} and {nb} recording(s), a test needs >= "
                    f"{MIN_TEST_RECORDINGS} per side (perflab profile --repeat {MIN_TEST_RECORDINGS}); "
                    "the table is descriptive only")
        return (f"test: Welch's t on each function's share of a recording ({na} and {nb} recordings), "
                f"Holm over {len(self.tests)} functions at {self.alpha:.0%}; the total period is not "
                "tested (drift between the two campaigns moves it too)")

    @property
    def differing(self) -> list[FunctionTest]:
        # Shares add up to 1: one function that grew shrinks all others, so those that grew on
        # the slower side (B) come first; they are the ones to look at.
        return sorted((t for t in self.tests if t.differs),
                      key=lambda t: (t.share_b <= t.share_a, t.p_holm, t.symbol))

    @property
    def count_note(self) -> str:
        """The run-to-run spread of each side's total Ir: what a change must exceed."""
        return (f"run-to-run spread of the total Ir: {self.a_label} {spread_text(spread(self.a_totals), len(self.a_totals))}, "
                f"{self.b_label} {spread_text(spread(self.b_totals), len(self.b_totals))}")

    def _count_test_note(self) -> str:
        na, nb = self.n_recordings
        if not self.tested:
            return (f"no test possible: {na} and {nb} recording(s), a test needs >= {MIN_COUNT_RECORDINGS} "
                    f"per side (perflab profile --instrument callgrind --repeat {MIN_COUNT_RECORDINGS}); "
                    "ranges only")
        effect = (f"beyond 1 +- {self.min_effect:.2%}" if self.min_effect else
                  "beyond 1 (no minimum effect: counts are exact)")
        return (f"test: B/A of each function's exclusive Ir by Welch's t on log counts, exact where every "
                f"recording of a side counted the same ({na} and {nb} recordings); Holm over the "
                f"{self.count_tested} functions holding >= {MIN_COUNTED_SHARE:.1%} of Ir; changed: Holm p < "
                f"{self.alpha:.0%} and the interval {effect}")

    @property
    def count_changed(self) -> list[CountDiffRow]:
        """Changed functions, largest change in instructions first."""
        return sorted((r for r in [*self.count_rows, *self.count_others] if r.changed),
                      key=lambda r: (-abs(r.change), r.symbol))

    def _named(self, status: str) -> list[CountDiffRow]:
        return sorted((r for r in [*self.count_rows, *self.count_others] if r.status == status),
                      key=lambda r: (-abs(r.change), r.symbol))

    def _count_verdict(self) -> str:
        ta, tb = (sum(t) / len(t) if t else 0.0 for t in (self.a_totals, self.b_totals))
        total = f"{self.b_label} runs {tb - ta:+,.0f} instructions ({(tb - ta) / ta if ta else 0:+.2%}) per recording over {self.a_label}"
        tail = f"{total}; {self.count_note}"
        if not self.tested:
            moved = (f"; {self.count_rows[0].symbol} moved most: {self.count_rows[0].change:+,.0f} instructions "
                     "exclusive per recording" if self.count_rows and self.count_rows[0].change else "")
            return f"{self._count_test_note()}{moved}; nothing is called changed; {tail}"
        family = (f"Welch's t on log counts, exact where constant; Holm over {self.count_tested} functions "
                  f"at {self.alpha:.0%}")
        changed = self.count_changed
        if changed:
            r = changed[0]
            pct = f" ({r.change_pct:+.1%})" if r.change_pct is not None else ""
            more = "".join(f", {o.symbol} {o.change:+,.0f}" for o in changed[1:4])
            more += f" and {len(changed) - 4} more" if len(changed) > 4 else ""
            head = (f"{r.symbol} changed most: {r.change:+,.0f} instructions exclusive{pct} per recording, "
                    f"{r.test_text()}; {len(changed)} of {self.count_tested} functions tested changed "
                    f"({family}){': also ' + more[2:] if more else ''}")
        else:
            head = f"no tested function's exclusive instruction count changed ({family})"
        for status, word in ((APPEARED, f"appeared in {self.b_label}"), (VANISHED, f"vanished from {self.b_label}")):
            rows = self._named(status)
            if rows:
                head += f"; {word}: " + ", ".join(f"{o.symbol} {o.change:+,.0f}" for o in rows[:3])
                head += f" and {len(rows) - 3} more" if len(rows) > 3 else ""
        return f"{head}; {tail}"

    @property
    def verdict(self) -> str:
        if self.instrument == "callgrind":
            return self._count_verdict()
        total = (f"{self.b_label} has {self.extra_fraction:+.1%} {self.event} period per recording "
                 f"over {self.a_label}")
        if self.speeds:
            total += f" ({self.speeds['line']}; each side's mean at the same mix of speeds)"
        if not self.tested:
            top = (f"; the largest share of the extra in {self.rows[0].symbol} "
                   f"({self.rows[0].share_of_extra:.1%})" if self.rows else "")
            return f"{self.test_note}: {total}{top}"
        if not self.tests:
            return f"no function holds {MIN_TESTED_SHARE:.1%} of the period on both sides: nothing to test; {total}"
        if not self.differing:
            return (f"no function's share of the period differs between {self.a_label} and "
                    f"{self.b_label} (Welch, Holm over {len(self.tests)} at {self.alpha:.0%}); "
                    f"{total} (not tested)")
        named = ", ".join(f"{t.symbol} {t.share_a:.1%} -> {t.share_b:.1%} (Holm p {t.p_holm:.2g})"
                          for t in self.differing)
        n = len(self.differing)
        return (f"{n} function{'s' * (n != 1)} take{'s' * (n == 1)} a different share of the period "
                f"in {self.b_label} than in {self.a_label} (Welch, Holm over {len(self.tests)} at "
                f"{self.alpha:.0%}): {named}; {total} (not tested)")

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["rows"] = [r.as_dict() for r in self.rows]
        d["tests"] = [t.as_dict() for t in self.tests]
        d["count_rows"] = [r.as_dict() for r in self.count_rows]
        d["count_others"] = [r.as_dict() for r in self.count_others]
        d["n_recordings"] = list(self.n_recordings)
        d["extra_fraction"] = self.extra_fraction
        d["tested"] = self.tested
        d["test_note"] = self.test_note
        d["verdict"] = self.verdict
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ProfileDiffResult":
        return decode(cls, d)  # the properties as_dict adds (tested, verdict, ...) name no field


@dataclass
class Side:
    """One side of a diff: its recordings' profiles and the event they were recorded with."""

    label: str
    profiles: list[Profile]
    event: str | None
    counts: list[Counts] = field(default_factory=list)  # a callgrind campaign's recordings
    stacks: list[dict[str, int]] = field(default_factory=list)  # folded, per recording (--call-graph)


def load_side(ref: str, store: Store | None, recorder: WindowRecorder) -> Side:
    """A perf.data path, or a stored profile campaign id -> its recordings' profiles."""
    if os.path.exists(ref):
        chains = fold(parse_stacks(recorder.perf_script(ref, STACK_FIELDS, chains=True)))
        return Side(ref, [aggregate(read_samples(ref, recorder))], recorder.perf_event(ref), stacks=[chains] if chains else [])
    if not ref.isdigit() or store is None:
        raise PerflabError(f"{ref}: neither a perf.data file nor a stored campaign id")
    camp = store.campaign(int(ref))
    if camp.study != "profile":
        raise PerflabError(f"campaign {ref} is a {camp.study} campaign: give the id of a 'perflab profile' campaign")
    runs = [m.result for m in store.measurements(camp.id)]
    good = [r for r in runs if r.ok and r.health.get("window", {}).get("opened")
            and ("profile" in r.health or "counts" in r.health)]
    if not good:
        raise PerflabError(f"campaign {ref} has no recording whose window opened; record it again")
    events = {r.health.get("event") for r in good}
    if len(events) > 1:
        raise PerflabError(f"campaign {ref} mixes events {sorted(map(str, events))}: cannot diff it")
    stacks = [r.health["stacks"] for r in good if "stacks" in r.health]
    stacks = stacks if len(stacks) == len(good) else []
    if events == {"callgrind"}:
        return Side(ref, [], "callgrind", recorded_counts(good), stacks)
    return Side(ref, [profile_from_dict(r.health["profile"]) for r in good], events.pop(), stacks=stacks)


def diff(config: ProfileDiffConfig, a: Side, b: Side) -> ProfileDiffResult:
    """Contributors to the slower side's extra period per recording; each function's share
    tested (Welch, Holm) where both sides have enough recordings."""
    if a.counts or b.counts:
        return _diff_counted(config, a, b)
    if a.event and b.event and a.event != b.event:
        raise PerflabError(f"{a.label} was recorded with {a.event} and {b.label} with {b.event}: "
                           "a diff needs both sides recorded with the same event (--perf-event)")
    event = a.event or b.event or "unknown event"
    pa, pb = a.profiles, b.profiles
    # like with like: two speeds in the recordings' totals give each side's mean at one mix of them
    std = standardised(pa, pb)
    ma, mb = (std.a, std.b) if std else (mean_profile(pa), mean_profile(pb))
    swapped = ma.period > mb.period
    if swapped:
        a, b, pa, pb, ma, mb = b, a, pb, pa, mb, ma
    rows = diff_profiles(ma, mb)
    alpha = round(1 - config.level, 12)  # 0.05, not 0.050000000000000044
    tests = share_tests(pa, pb, alpha) if min(len(pa), len(pb)) >= MIN_TEST_RECORDINGS else []
    rows = [r for r in rows if r.share_of_extra >= config.threshold][: config.top]
    fl, only = (differential(a.stacks, b.stacks, marks_of(tests, pa, pb, config.level), config.level)
                if a.stacks and b.stacks else (None, []))
    return ProfileDiffResult(a.label, b.label, event, unit_of(event), ma.period, mb.period, swapped,
                             rows, (len(pa), len(pb)), alpha, tests, speeds=std.as_dict(swapped) if std else None,
                             flame=fl, flame_only=only)


def shares(profiles: Sequence[Profile], symbols: Sequence[str]) -> list[list[float]]:
    """Per recording, each symbol's share of that recording's period."""
    out = []
    for p in profiles:
        total = p.period or 1.0
        out.append([(p.functions[s].period if s in p.functions else 0.0) / total for s in symbols])
    return out


def share_tests(pa: Sequence[Profile], pb: Sequence[Profile], alpha: float) -> list[FunctionTest]:
    """Welch's t-test of each function's share of a recording, A against B, Holm-corrected over
    the functions holding >= MIN_TESTED_SHARE of the pooled period (at most MAX_TESTED)."""
    pooled = mean_profile([*pa, *pb])
    chosen = sorted((k for k, f in pooled.functions.items()
                     if pooled.period and f.period / pooled.period >= MIN_TESTED_SHARE),
                    key=lambda k: (-pooled.functions[k].period, k))[:MAX_TESTED]
    if not chosen:
        return []
    sa, sb = shares(pa, chosen), shares(pb, chosen)
    ps = [welch_p([r[i] for r in sa], [r[i] for r in sb]) for i in range(len(chosen))]
    adj = holm(ps)
    out = []
    for i, sym in enumerate(chosen):
        mean_a = sum(r[i] for r in sa) / len(sa)
        mean_b = sum(r[i] for r in sb) / len(sb)
        out.append(FunctionTest(sym, mean_a, mean_b, ps[i], adj[i], adj[i] < alpha))
    return out


def welch_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p of Welch's unequal-variance t-test (scipy.stats.ttest_ind, equal_var=False);
    1 where both sides are constant and equal, 0 where constant and different."""
    import warnings

    from scipy.stats import ttest_ind

    if max(a) == min(a) and max(b) == min(b):
        return 1.0 if a[0] == b[0] else 0.0
    # Sample counts a side that are nearly equal (3 recordings of one event) make scipy warn of
    # precision loss in the variance on the user's terminal; the p it returns is still Welch's
    # (a NaN from it is taken as 1 below), so the warning says nothing the user can act on.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        p = float(ttest_ind(a, b, equal_var=False).pvalue)
    return 1.0 if math.isnan(p) else p


def _diff_counted(config: ProfileDiffConfig, a: Side, b: Side) -> ProfileDiffResult:
    """Two callgrind campaigns: functions by the change of their exclusive Ir, as given (A, B)."""
    if not (a.counts and b.counts):
        counted, other = (a, b) if a.counts else (b, a)
        raise PerflabError(f"{counted.label} was counted with callgrind and {other.label} sampled with "
                           f"{other.event or 'perf'}: a diff needs both sides recorded with the same "
                           "instrument (--instrument)")
    alpha = round(1 - config.level, 12)
    rows = diff_counts(a.counts, b.counts, alpha, config.min_effect)
    moved = sum(abs(r.change) for r in rows) or 1.0
    shown = [r for r in rows if r.changed or abs(r.change) >= config.threshold * moved][: config.top]
    kept = {id(r) for r in shown}
    others = [r for r in rows if id(r) not in kept and (r.changed or r.status in (APPEARED, VANISHED))]
    fl, only = differential(a.stacks, b.stacks, count_marks(rows), config.level) if a.stacks and b.stacks else (None, [])
    return ProfileDiffResult(a.label, b.label, "callgrind", "Ir", n_recordings=(len(a.counts), len(b.counts)),
                             flame=fl, flame_only=only,
                             alpha=alpha, instrument="callgrind", count_rows=shown, count_others=others,
                             count_tested=sum(r.status == "tested" for r in rows), min_effect=config.min_effect,
                             a_totals=[c.totals[0] for c in a.counts], b_totals=[c.totals[0] for c in b.counts])
