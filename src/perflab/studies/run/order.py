"""The order of `perflab run`'s runs beyond the shuffled rounds: a lone command's rounds back to
back, and no lone command at all where the first rounds show two speeds.

Hyperfine's rule gives each command its own number of runs (3 s of runs at its first run's
time), and --precision stops each command on its own, so a command can run on alone after
another stopped: those runs form a block, and on a machine at two speeds a block meets its own
mix of speeds. Where the runs so far show two speeds when the first command would stop (each
other command against the first, stats.speeds on their common rounds), every command instead
runs in every round until the last one stops (--max-runs and --max-time still bound them), and
the output says so in one line. --runs N gives every command the same rounds anyway.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Sequence

from perflab.stats.speeds import MODES_MIN_N, assign, worth_looking

if TYPE_CHECKING:  # the study module imports this one
    from perflab.studies.run.study import RunConfig

MAX_BATCH = 512  # bounds what a journal holds and how far a --max-time check can lag


def rounds_ahead(config: RunConfig, done: int, target: int | None, walls: list[float],
                 elapsed_s: float) -> int:
    """How many rounds of a lone command can run before the stop rule could say stop: the runs
    left to a known target (and --max-runs), as many as fit in what is left of --max-time at
    the median run time so far; 1 while a rule looks at every run (--precision) or the target
    is not known yet (hyperfine's rule sets it from the first run)."""
    if target is None or (config.precision is not None and config.runs is None):
        return 1
    left = target - done
    if config.max_runs is not None:
        left = min(left, config.max_runs - done)
    if config.max_time is not None:
        typical = statistics.median(walls) if walls else config.max_time
        left = min(left, int(max(0.0, config.max_time - elapsed_s) / max(typical, 1e-6)))
    return max(1, min(left, MAX_BATCH))


def two_speeds_seen(walls: Sequence[Sequence[float]]) -> bool:
    """Whether the wall times so far show two speeds: stats.speeds.assign of each command's
    common rounds against the first command's finds two (a sample that looks quiet is not fitted)."""
    first = walls[0] if walls else ()
    for other in walls[1:]:
        m = min(len(first), len(other))
        a, b = list(first[:m]), list(other[:m])
        if 2 * m < MODES_MIN_N or not (worth_looking(a) or worth_looking(b) or worth_looking(a + b)):
            continue
        if assign(a, b)[0] is not None:
            return True
    return False


def interleave_note(rounds: int, runs: Sequence[int]) -> str:
    """The one line saying that every command ran to the last one's stop, and why."""
    each = f"{runs[0]} runs each" if len(set(runs)) == 1 else f"{min(runs)}-{max(runs)} runs each"
    return (f"two speeds in the first {rounds} rounds: every command ran in every round until the "
            f"last one stopped ({each}), so all met the same speeds (interleaved, none alone in a block)")
