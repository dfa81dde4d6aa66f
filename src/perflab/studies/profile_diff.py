"""`perflab profile diff A B`: which functions account for the extra samples of the slower profile.

Seed 001's table ("major contributors to the additional runtime on core 8"). A side is a perf.data
file or a stored profile campaign (its recordings' folded profiles, kept with its runs). Both
sides must be recordings of the same perf event: the extra is in that event's unit (ms of
cpu-clock, Mcycles of cycles). With >= 3 recordings per side each share of the extra gets an
unpaired percentile-bootstrap interval over recordings (A and B resampled independently:
recordings of two runs are not pairs); with fewer, no interval is given, and the table says so.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from perflab.errors import PerflabError
from perflab.model import known_fields
from perflab.measure.window import WindowRecorder
from perflab.stats.interval import CI
from perflab.store import Store
from perflab.studies.profile_parse import (
    DiffRow, Profile, aggregate, diff_profiles, mean_profile, profile_from_dict, read_samples,
)

NAME = "profile_diff"
MIN_CI_RECORDINGS = 3  # per side: fewer recordings give no interval
# Below this many recordings per side a percentile bootstrap covers less than its nominal level.
NOMINAL_RECORDINGS = 10

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
    level: float = 0.95
    n_boot: int = 2000
    seed: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ProfileDiffConfig":
        return cls(**known_fields(cls, d))


Config = ProfileDiffConfig


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
    ci_note: str = ""  # how the intervals were made, or why there are none
    extra_ci: dict[str, float] | None = None  # {"low", "high", "level"} of extra_fraction
    campaign_id: int | None = None

    @property
    def extra_fraction(self) -> float:
        return (self.b_period - self.a_period) / self.a_period if self.a_period else 0.0

    @property
    def verdict(self) -> str:
        top = (f"{self.rows[0].symbol} ({self.rows[0].share_of_extra:.1%} of the extra)"
               if self.rows else "none above the threshold")
        ci = (f" ({self.extra_ci['level']:.0%} CI {self.extra_ci['low']:.1%} .. {self.extra_ci['high']:.1%})"
              if self.extra_ci else "")
        if self.extra_ci and self.extra_ci["low"] <= 0:
            return (f"no evidence that {self.b_label} spends more {self.event} period than {self.a_label}: "
                    f"{self.extra_fraction:+.1%}{ci} per recording, an interval that holds 0; the "
                    "shares of the extra are noise")
        return (f"{self.b_label} has {self.extra_fraction:.1%}{ci} more {self.event} period than "
                f"{self.a_label} per recording; top contributor {top}")

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["rows"] = [r.as_dict() for r in self.rows]
        d["n_recordings"] = list(self.n_recordings)
        d["extra_fraction"] = self.extra_fraction
        d["verdict"] = self.verdict
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ProfileDiffResult":
        kw = known_fields(cls, d)
        kw["rows"] = [DiffRow.from_dict(r) for r in kw.get("rows") or []]
        kw["n_recordings"] = tuple(kw.get("n_recordings") or (0, 0))
        return cls(**kw)


@dataclass
class Side:
    """One side of a diff: its recordings' profiles and the event they were recorded with."""

    label: str
    profiles: list[Profile]
    event: str | None


def load_side(ref: str, store: Store | None, recorder: WindowRecorder) -> Side:
    """A perf.data path, or a stored profile campaign id -> its recordings' profiles."""
    if os.path.exists(ref):
        return Side(ref, [aggregate(read_samples(ref, recorder))], recorder.perf_event(ref))
    if not ref.isdigit() or store is None:
        raise PerflabError(f"{ref}: neither a perf.data file nor a stored campaign id")
    camp = store.campaign(int(ref))
    if camp.study != "profile":
        raise PerflabError(f"campaign {ref} is a {camp.study} campaign: give the id of a 'perflab profile' campaign")
    runs = [m.result for m in store.measurements(camp.id)]
    good = [r for r in runs if r.ok and r.health.get("window", {}).get("opened") and "profile" in r.health]
    if not good:
        raise PerflabError(f"campaign {ref} has no recording whose window opened; record it again")
    events = {r.health.get("event") for r in good}
    if len(events) > 1:
        raise PerflabError(f"campaign {ref} mixes events {sorted(map(str, events))}: cannot diff it")
    return Side(ref, [profile_from_dict(r.health["profile"]) for r in good], events.pop())


def diff(config: ProfileDiffConfig, a: Side, b: Side) -> ProfileDiffResult:
    """Contributors to the slower side's extra period per recording, with bootstrap intervals."""
    if a.event and b.event and a.event != b.event:
        raise PerflabError(f"{a.label} was recorded with {a.event} and {b.label} with {b.event}: "
                           "a diff needs both sides recorded with the same event (--perf-event)")
    event = a.event or b.event or "unknown event"
    pa, pb = a.profiles, b.profiles
    ma, mb = mean_profile(pa), mean_profile(pb)
    swapped = ma.period > mb.period
    if swapped:
        a, b, pa, pb, ma, mb = b, a, pb, pa, mb, ma
    rows = diff_profiles(ma, mb)
    na, nb = len(pa), len(pb)
    extra_ci = None
    if min(na, nb) >= MIN_CI_RECORDINGS:
        cis, extra = _bootstrap(pa, pb, [r.symbol for r in rows], config)
        rows = [DiffRow(**{**r.as_dict(), "ci": cis[r.symbol].as_dict()}) for r in rows]
        extra_ci = extra.as_dict()
        note = (f"{config.level:.0%} CI: unpaired percentile bootstrap over recordings "
                f"({na} and {nb}, {config.n_boot} resamples)")
        if min(na, nb) < NOMINAL_RECORDINGS:
            note += (f"; with fewer than {NOMINAL_RECORDINGS} recordings per side it covers less than "
                     f"{config.level:.0%}: record more with --repeat")
    else:
        note = (f"no CI: {na} and {nb} recording(s); an interval needs >= {MIN_CI_RECORDINGS} per side "
                "(perflab profile --repeat 3 or more)")
    rows = [r for r in rows if r.share_of_extra >= config.threshold][: config.top]
    return ProfileDiffResult(a.label, b.label, event, unit_of(event), ma.period, mb.period, swapped,
                             rows, (na, nb), note, extra_ci)


def _bootstrap(pa: Sequence[Profile], pb: Sequence[Profile], symbols: list[str],
               config: ProfileDiffConfig) -> tuple[dict[str, CI], CI]:
    """Percentile intervals of each function's share of the extra, and of the extra itself
    (B over A), with A and B resampled apart."""
    import numpy as np

    index = {s: i for i, s in enumerate(symbols)}

    def matrix(profs: Sequence[Profile]) -> tuple[Any, Any]:
        m = np.zeros((len(profs), len(symbols)))
        for i, p in enumerate(profs):
            for k, f in p.functions.items():
                if k in index:
                    m[i, index[k]] = f.period
        return m, np.array([p.period for p in profs], dtype=float)

    fa, ta = matrix(pa)
    fb, tb = matrix(pb)
    rng = np.random.default_rng(config.seed)
    ia = rng.integers(0, len(pa), size=(config.n_boot, len(pa)))
    ib = rng.integers(0, len(pb), size=(config.n_boot, len(pb)))
    base = ta[ia].mean(axis=1)
    extra = tb[ib].mean(axis=1) - base  # (n_boot,)
    dfun = fb[ib].mean(axis=1) - fa[ia].mean(axis=1)  # (n_boot, symbols)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = dfun / extra[:, None]
    share = share[np.isfinite(share).all(axis=1)]
    alpha = (1 - config.level) / 2
    lo, hi = np.quantile(share, [alpha, 1 - alpha], axis=0) if len(share) else (
        np.full(len(symbols), np.nan), np.full(len(symbols), np.nan))
    xlo, xhi = np.quantile(extra / base, [alpha, 1 - alpha])
    return ({s: CI(float(lo[i]), float(hi[i]), config.level) for s, i in index.items()},
            CI(float(xlo), float(xhi), config.level))
