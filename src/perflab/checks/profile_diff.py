"""The profile diff verdict on simulated recordings: a function made 30 % slower is named, and two
sides drawn from one program name nothing, under every noise model of checks/noise.py.

A recording is a window of a program whose eight functions hold 35, 20, 15, 10, 8, 5, 4 and 3 %
of 2 s. Each side is one campaign of the model (its level, two speeds, drift, tail, bursts scale
the whole recording, as a slower machine does); each function also varies on its own from
recording to recording (log-normal, the model's sigma), and perf samples every 250 us (Poisson
counts). Null: both sides the same program; a false difference is any function the verdict calls
different. Planted: the third function (15 %) takes 30 % longer on B; detected when the verdict
names it, with its share up. ``bench/verdicts.py`` prints one line per model.
"""

from __future__ import annotations

import math
import random

from perflab.checks.noise import STUDY_MODELS, StudyModel
from perflab.studies.profile.diff_flame import ratio_interval
from perflab.studies.profile.diff import MIN_TEST_RECORDINGS, ProfileDiffConfig, ProfileDiffResult, Side, diff
from perflab.studies.profile.parse import Function, Profile

SHARES = (0.35, 0.20, 0.15, 0.10, 0.08, 0.05, 0.04, 0.03)
WINDOW_S = 2.0
PERIOD_NS = 250_000  # 4 kHz sampling
PLANTED_FUNCTION = "f2"
PLANTED = 1.30


def _poisson(rng: random.Random, lam: float) -> int:
    """A Poisson count (normal approximation above 50, where it is within a sample or two)."""
    if lam > 50:
        return max(0, round(rng.gauss(lam, math.sqrt(lam))))
    k, p, limit = 0, 1.0, math.exp(-lam)
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def recording(model: StudyModel, campaign, rng: random.Random, slower: dict[str, float]) -> Profile:
    """One recording's profile: the machine's factor on the whole window, each function's own
    jitter, Poisson sample counts."""
    factor = campaign.factor() * campaign.burst_hits()
    funcs = {}
    total_n = 0
    for i, share in enumerate(SHARES):
        name = f"f{i}"
        secs = WINDOW_S * share * slower.get(name, 1.0) * factor * rng.lognormvariate(0.0, model.sigma)
        n = _poisson(rng, secs * 1e9 / PERIOD_NS)
        funcs[name] = Function(name, "sim", n, n * PERIOD_NS)
        total_n += n
    return Profile(total_n, total_n * PERIOD_NS, funcs)


def simulate(model: StudyModel, rng: random.Random, per_side: int, slower: dict[str, float]) -> ProfileDiffResult:
    """Two campaigns of ``per_side`` recordings each under ``model``; B with ``slower`` applied."""
    ca, cb = model.campaign(rng), model.campaign(rng)
    a = Side("A", [recording(model, ca, rng, {}) for _ in range(per_side)], "cpu-clock")
    b = Side("B", [recording(model, cb, rng, slower) for _ in range(per_side)], "cpu-clock")
    return diff(ProfileDiffConfig("A", "B", threshold=0.0), a, b)


def detected(res: ProfileDiffResult) -> bool:
    """The planted function named as differing, its share up on the slower side B."""
    side_b_up = {t.symbol: (t.share_b > t.share_a) != res.swapped for t in res.differing}
    return side_b_up.get(PLANTED_FUNCTION, False)


def rates(model: StudyModel, runs: int, per_side: int = MIN_TEST_RECORDINGS, seed: int = 0) -> tuple[float, float]:
    """(false-difference rate, detection rate) over ``runs`` null and ``runs`` planted diffs."""
    rng = random.Random(seed)
    fp = det = 0
    for _ in range(runs):
        fp += bool(simulate(model, rng, per_side, {}).differing)
        det += detected(simulate(model, rng, per_side, {PLANTED_FUNCTION: PLANTED}))
    return fp / runs, det / runs


def ratio_coverage(model: StudyModel, runs: int, per_side: int = MIN_TEST_RECORDINGS, seed: int = 0,
                   level: float = 0.95) -> float:
    """How often the differential flame graph's interval of B/A (diff_flame.ratio_interval) holds
    the true ratio, 1, for each function of null diffs (both sides one program): its real level."""
    rng = random.Random(seed)
    held = total = 0
    for _ in range(runs):
        ca, cb = model.campaign(rng), model.campaign(rng)
        pa = [recording(model, ca, rng, {}) for _ in range(per_side)]
        pb = [recording(model, cb, rng, {}) for _ in range(per_side)]
        for i in range(len(SHARES)):
            ri = ratio_interval(*([p.share(f"f{i}") for p in side] for side in (pa, pb)), level)  # type: ignore[call-arg, arg-type]  # a, b
            if ri is not None:
                total += 1
                held += ri[1] <= 1.0 <= ri[2]
    return held / total if total else 0.0


def verdict_check(runs: int = 200, seed: int = 0, per_side: int = 5) -> list[str]:
    """One verdict-check line per noise model, at 5 recordings per side (3, the fewest that test,
    detect 60-85 %: docs/profile.md)."""
    lines = []
    for name, model in STUDY_MODELS.items():
        fp, det = rates(model, runs, per_side, seed)
        lines.append(f"verdict-check: profile-diff[{name}] false_positive={fp:.3f} detection={det:.3f} "
                     f"runs={runs} recordings={per_side}+{per_side}")
    return lines


if __name__ == "__main__":
    print("\n".join(verdict_check()))
