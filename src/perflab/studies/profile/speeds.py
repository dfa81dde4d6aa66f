"""Like with like in `perflab profile diff`: where the recordings' total periods show two speeds,
each side's mean profile is taken at the same mix of speeds.

A recording's total period (its CPU time under cpu-clock, its cycles) moves with the speed the
machine ran it at, and the share of recordings at each speed changes from campaign to campaign,
so two plain means per recording differ by the mix as much as by the code. stats.speeds finds
the speeds in the pooled totals of both sides (as run, compare and gate do) and assigns each
recording its speed; each side's profile is then the mean at each speed weighted by the pooled
share of that speed (direct standardisation), over the speeds both sides reached. Shares of the
period (the functions' test) are unchanged: a speed scales every function alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from perflab.stats.speeds import WithinSpeeds, within_speeds, worth_looking
from perflab.studies.profile.parse import Profile, mean_profile, merge


@dataclass(frozen=True)
class Standardised:
    """Each side's mean profile at the pooled mix of speeds, and the comparison it rests on."""

    a: Profile
    b: Profile
    within: WithinSpeeds  # two speeds

    @property
    def line(self) -> str:
        return self.within.line()

    def as_dict(self, swapped: bool = False) -> dict:
        """``swapped``: the diff shows B as A (recordings per speed listed B's first)."""
        pairs = [[len(s.b), len(s.a)] if swapped else [len(s.a), len(s.b)] for s in self.within.speeds]
        return {"line": self.line, "shares": [s.share for s in self.within.speeds], "recordings": pairs,
                "notes": list(self.within.notes), "method": self.within.method}


def standardised(pa: Sequence[Profile], pb: Sequence[Profile]) -> Standardised | None:
    """The two sides' mean profiles at the pooled share of each speed both reached, or None where
    the pooled totals show one speed (or stats.speeds could not tell a change from a speed)."""
    ta, tb = [float(p.period) for p in pa], [float(p.period) for p in pb]
    if not worth_looking(ta + tb) or min(len(ta), len(tb)) < 2:
        return None
    w = within_speeds(ta, tb, with_p=False)
    usable = [k for k, s in enumerate(w.speeds) if s.usable]
    if not w.two or not usable or w.undecided:
        return None
    la, lb = w.labels
    total = sum(w.speeds[k].share for k in usable)
    weights = {k: w.speeds[k].share / total for k in usable}

    def side(profiles: Sequence[Profile], labels: Sequence[int]) -> Profile:
        return _weighted([([p for p, lab in zip(profiles, labels) if lab == k], weights[k]) for k in usable])

    return Standardised(side(pa, la), side(pb, lb), w)


def _weighted(groups: Sequence[tuple[Sequence[Profile], float]]) -> Profile:
    """Sum over groups of weight x the group's mean profile (weights summing to 1)."""
    parts = []
    for profiles, weight in groups:
        m = mean_profile(profiles)
        for f in m.functions.values():
            f.period = f.period * weight  # type: ignore[assignment]  # int fields hold the weighted share, a float
            f.samples = f.samples * weight  # type: ignore[assignment]  # as above
        parts.append(Profile(m.samples * weight, m.period * weight, m.functions))  # type: ignore[arg-type]  # as above
    return merge(parts)
