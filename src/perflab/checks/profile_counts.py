"""The callgrind `profile diff` verdict on simulated recordings: a function made slower is named
changed and first, and two sides of one program name nothing changed.

A recording holds twelve functions with fixed exclusive counts (minihlt's whole run: 14, 13, 12,
12, 11, 10, 8, 5, 4, 3, 1.4 and 1.1 % of 360 million Ir). Run-to-run jitter is noise.py's
log-normal ``sigma``, twice: once on the whole recording (``Campaign.factor``: a window's edges
move, so every function gains or loses alike) and once per function on its own; counts are
rounded to whole instructions. Two cases, as measured (docs/profile.md):

- whole run: sigma 1e-5 (minihlt's totals moved by 5e-8, its functions by 0 except printf's
  digits; 1e-5 is the bound tests/real/test_profile_callgrind.py holds), planted +0.5 %;
- window (one event cut out at its markers by vgdb): sigma 1 % (functions moved 0.6-2.3 % over
  2 recordings), planted +10 %;
- window with drift: as the window, plus noise.py's ``shift`` of 0.5 % between the two
  campaigns (vgdb's latency, hence the edges, moves with the machine's load); no test of counts
  can tell it from a change, so it is shown at the default min_effect 0 and at 2 %.

Null: both sides one program; a false alarm is any function called changed. Planted: the third
function (12 %) runs ``planted`` more instructions on B; detected when the verdict calls it
changed and names it first (largest change in instructions among those changed).
``bench/verdicts.py`` prints one line per case.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from perflab.checks.noise import NoiseModel
from perflab.measure.callgrind import Counts, FunctionCounts
from perflab.studies.profile.diff import ProfileDiffConfig, ProfileDiffResult, Side, diff

SHARES = (0.14, 0.13, 0.12, 0.12, 0.11, 0.10, 0.08, 0.05, 0.04, 0.03, 0.014, 0.011)
PLANTED_FUNCTION = "f2"


@dataclass(frozen=True)
class Case:
    """One kind of recording: its size, its jitter (a noise.py model), the planted change."""

    name: str
    total: float  # Ir of a recording
    model: NoiseModel
    planted: float  # relative, on PLANTED_FUNCTION's exclusive count
    recordings: int  # per side


CASES = {
    "whole-run": Case("whole-run", 360e6, NoiseModel("callgrind-whole", sigma=1e-5), 0.005, 2),
    "window": Case("window", 74e6, NoiseModel("callgrind-window", sigma=0.01), 0.10, 5),
    "window-drift": Case("window-drift", 74e6, NoiseModel("callgrind-window-drift", sigma=0.01, shift=0.005),
                         0.10, 5),
}


def recording(case: Case, campaign, rng: random.Random, slower: dict[str, float]) -> Counts:
    """One recording's counts: the whole recording's factor, each function's own jitter."""
    whole = campaign.factor()
    funcs = {}
    for i, share in enumerate(SHARES):
        name = f"f{i}"
        n = round(case.total * share * (1 + slower.get(name, 0.0)) * whole
                  * rng.lognormvariate(0.0, case.model.sigma))
        funcs[name] = FunctionCounts(name, "sim", [float(n)], [float(n)])
    return Counts(["Ir"], [sum(f.self_[0] for f in funcs.values())], funcs, 1)


def simulate(case: Case, rng: random.Random, slower: dict[str, float], per_side: int | None = None,
             min_effect: float = 0.0) -> ProfileDiffResult:
    """Two campaigns of recordings under the case's model; B with ``slower`` applied."""
    n = per_side or case.recordings
    ca, cb = case.model.campaign(rng), case.model.campaign(rng)
    a = Side("A", [], "callgrind", [recording(case, ca, rng, {}) for _ in range(n)])
    b = Side("B", [], "callgrind", [recording(case, cb, rng, slower) for _ in range(n)])
    return diff(ProfileDiffConfig("A", "B", threshold=0.0, top=len(SHARES), min_effect=min_effect), a, b)


def detected(res: ProfileDiffResult) -> bool:
    """The planted function called changed, up, and first among the changed."""
    changed = res.count_changed
    return bool(changed) and changed[0].symbol == PLANTED_FUNCTION and changed[0].change > 0


def rates(case: Case, runs: int, seed: int = 0, per_side: int | None = None,
          min_effect: float = 0.0) -> tuple[float, float]:
    """(false-alarm rate, detection rate) over ``runs`` null and ``runs`` planted diffs."""
    rng = random.Random(seed)
    fp = det = 0
    for _ in range(runs):
        fp += bool(simulate(case, rng, {}, per_side, min_effect).count_changed)
        det += detected(simulate(case, rng, {PLANTED_FUNCTION: case.planted}, per_side, min_effect))
    return fp / runs, det / runs


# (case, recordings a side, min_effect): each case at its own recordings, the window at 2 (the
# fewest that test), the drifting window with the band that quiets it.
LINES = [(CASES["whole-run"], 2, 0.0), (CASES["window"], 5, 0.0), (CASES["window"], 2, 0.0),
         (CASES["window-drift"], 5, 0.0), (CASES["window-drift"], 5, 0.02)]


def verdict_check(runs: int = 200, seed: int = 0) -> list[str]:
    """One verdict-check line per entry of LINES."""
    lines = []
    for case, per_side, min_effect in LINES:
        fp, det = rates(case, runs, seed, per_side, min_effect)
        lines.append(f"verdict-check: profile-counts[{case.name}] false_positive={fp:.3f} detection={det:.3f} "
                     f"runs={runs} recordings={per_side}+{per_side} jitter={case.model.sigma:g} "
                     f"drift={case.model.shift:g} planted=+{case.planted:.1%} min_effect={min_effect:g}")
    return lines


if __name__ == "__main__":
    print("\n".join(verdict_check()))
