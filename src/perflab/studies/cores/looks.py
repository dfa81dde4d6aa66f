"""`perflab cores --until-decided`: blocks of rounds until every CPU is decided at --min-effect, or
the budget ends (stats.sequential's design, as `perflab run --until-decided` uses it).

A block is the unit of the scan's evidence (timeline.py: blocks further apart than the machine's
states hold are independent draws of them), so the looks fall at the end of blocks: first after
--blocks blocks (3; --rounds split over them, 10 rounds a block at the defaults), then every half
as many again (stats.sequential.schedule), blocks starting --span / (--blocks - 1) seconds apart
as without looks. The budget is --max-runs rounds (DEFAULT_BUDGET) in whole blocks, cut to the
blocks --max-time holds at the first block's pace. Each CPU's question is one-sided: is it slower
than the rest by --min-effect or more? Its statistic is the block test's (the median of its block
levels, the pooled block-level SD, Student's t with the pooled degrees of freedom); at a look its
interval is the one at the look's level: a repeated confidence interval, its share of alpha
(Bonferroni over the CPUs scanned) spent over the looks by the O'Brien-Fleming-type function, so
the answers hold together at alpha over all looks and CPUs:

- ``slow``: the interval lies above 1 and the ratio is at least 1 + m (a slowdown of m shown);
- ``ruled out``: the interval's top is at most 1 + m (no slowdown of m or more);
- ``''``: undecided.

The boundaries are the two-sided design's (as instances' one-sided question uses them), so a
slowdown is shown at alpha / 2m a CPU: conservative by half.

A CPU decided ``slow`` is named slow only under the scan's other rules (slower in every block,
persistent over rounds, blocks spread over more time than the machine's states hold: analysis.py),
else unresolved. The blocks stop at the first look where every CPU is decided and none is
unresolved; where the budget ends first, the undecided CPUs read "cannot tell", with about the
blocks that would decide them (each side of the interval shrinks as 1 / sqrt(blocks)) and their
time at this scan's pace.

What it does not show: the levels hold for the design's looks and the block statistic's t limit
(Jennison & Turnbull 2000, ch. 11); blocks closer than the machine's states hold are not
independent, which the timeline's rule catches (unresolved), not the design.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Sequence

from perflab.stats import sequential
from perflab.studies.cores.detect import median_se
from perflab.studies.run.looks import Plan

if TYPE_CHECKING:  # the study module imports this one
    from perflab.studies.cores.study import CoresConfig

DEFAULT_BUDGET = 200  # rounds: 20 blocks of 10 rounds of 16 CPUs at 0.05 s, 30 s apart, take 10 minutes
DESIGN = "obf"
SLOW, RULED_OUT = "slow", "ruled out"


def per_block(config: CoresConfig) -> int:
    """Rounds in a block: --rounds split over the first look's blocks."""
    return max(2, config.rounds // config.blocks_used)


def first(config: CoresConfig) -> int:
    """The first look, in blocks: --blocks (the block test needs 2)."""
    return max(2, config.blocks_used)


def gap_s(config: CoresConfig) -> float:
    """Seconds between block starts: the first look's blocks spread over --span."""
    return config.span_used / max(config.blocks_used - 1, 1)


def budget(config: CoresConfig, first_block_s: float) -> int:
    """Blocks the scan may take: --max-runs rounds (DEFAULT_BUDGET) in whole blocks, and what
    --max-time holds at the first block's pace (a block every gap_s, or as long as one takes)."""
    limit = (config.max_runs or DEFAULT_BUDGET) // per_block(config)
    step = max(gap_s(config), first_block_s, 1e-6)
    limit = min(limit, 1 + int(max(config.max_time - first_block_s, 0.0) / step))
    return max(first(config), limit)


def alpha_each(config: CoresConfig, cpus: int) -> float:
    return config.alpha / max(1, cpus)


def due(config: CoresConfig, blocks: int, limit: int, cpus: int) -> bool:
    """Whether a look that could decide falls after ``blocks`` blocks of a budget of ``limit``."""
    return any(lk.runs == blocks and lk.level < 1.0 - 1e-9
               for lk in sequential.planned(first(config), limit, alpha_each(config, cpus), DESIGN))


def plan_at(config: CoresConfig, blocks: int, limit: int, cpus: int, final: bool) -> Plan:
    """The design's looks up to ``blocks`` blocks of a budget of ``limit``; ``final``: the budget
    ended (or --max-time cut it), so this look spends what is left."""
    a = alpha_each(config, cpus)
    final = final or blocks >= limit
    looks = sequential.design_at(first(config), limit, min(blocks, limit) if final else blocks, a, final, DESIGN)
    return Plan(looks, limit, a, final)


def interval(levels: Sequence[float], scale: float, df: float, level: float) -> tuple[float, float, float] | None:
    """(ratio, low, high) of a CPU's cost ratio from its block levels (log ratios) at ``level``:
    the median of the levels +- Student's t quantile x the pooled block-level SD x the median's SD
    factor (timeline.block_test's statistic); None with fewer than 2 blocks or no spread."""
    from scipy.special import stdtrit

    xs = sorted(v for v in levels if not math.isnan(v))
    if len(xs) < 2 or math.isnan(scale) or scale <= 0 or df <= 0:
        return None
    k = len(xs)
    center = xs[k // 2] if k % 2 else (xs[k // 2 - 1] + xs[k // 2]) / 2
    half = float(stdtrit(max(df, 1.0), (1.0 + level) / 2.0)) * scale * median_se(k)
    # At the first looks' levels (99.9 %) with one degree of freedom the t quantile runs to the
    # hundreds: an interval with no upper end (inf), which decides nothing, not an overflow.
    return _exp(center), _exp(center - half), _exp(center + half)


def _exp(x: float) -> float:
    return math.exp(x) if x < 709.0 else math.inf


def decision(ratio: float, low: float, high: float, min_effect: float) -> str:
    """SLOW (a slowdown of min_effect or more shown), RULED_OUT (one ruled out) or '' (undecided)."""
    if not all(math.isfinite(v) and v > 0 for v in (ratio, low, high)):
        return ""
    if low > 1.0 and ratio >= 1.0 + min_effect:
        return SLOW
    if high <= 1.0 + min_effect:
        return RULED_OUT
    return ""


def blocks_needed(blocks: int, ratio: float, low: float, high: float, min_effect: float) -> int:
    """About how many blocks would decide a CPU left undecided: a slowdown is shown once the
    interval's bottom clears 1, ruled out once its top comes under 1 + m; each side shrinks as
    1 / sqrt(blocks); the cheaper of the two. An estimate, not a promise."""
    d, margin = math.log(ratio), math.log1p(min_effect)
    below, above = d - math.log(low), math.log(high) - d
    shown = blocks * (below / d) ** 2 if d > 0 else math.inf
    ruled = blocks * (above / max(margin - d, margin / 2.0)) ** 2
    return max(blocks + 1, math.ceil(round(min(shown, ruled), 6)))


def settle(p: Plan, cpus: dict[int, dict], blocks: int, unresolved: bool, per_round: int, block_s: float) -> None:
    """Whether every CPU is decided (and none unresolved); where the budget ended first, about the
    blocks (and rounds, and seconds at this scan's pace: ``block_s`` from one block's start to the
    next's) that would decide the least decided CPU."""
    open_ = [c for c in cpus.values() if not c["decision"]]
    p.decided = bool(cpus) and not open_ and not unresolved
    if p.decided or not p.final:
        return
    needs = [blocks_needed(blocks, c["ratio"], c["low"], c["high"], c["min_effect"])
             for c in open_ if c["ratio"] is not None]
    nb = max(needs) if needs else 2 * blocks
    p.extra = {"needs_blocks": nb}
    p.needs_runs = nb * per_round
    p.needs_s = nb * block_s


def as_dict(p: Plan, cpus: dict[int, dict], per_round: int, alpha: float, min_effect: float) -> dict:
    """The result's ``sequential``: the design, the looks, and each CPU's repeated interval and
    decision."""
    out = p.as_dict()
    out.update(alpha=alpha, min_effect=min_effect, unit="blocks", rounds_per_block=per_round, needs_blocks=p.extra.get("needs_blocks"),
               cpus={str(c): v for c, v in cpus.items()})
    return out


def sentence(seq: dict, others: bool = False) -> str:
    """The verdict's clause on the CPUs not named slow (``others``: some are named): ruled out
    together, or cannot tell with what would decide it. Never "no CPU is slower" while one is
    undecided."""
    min_effect, alpha, cpus_total = seq["min_effect"], seq["alpha"], len(seq["cpus"])
    open_ = sorted(int(c) for c, v in seq["cpus"].items() if not v["decision"])
    looks = seq["looks"]
    nb = looks[-1]["runs"] if looks else 0
    rounds = nb * seq["rounds_per_block"]
    how = (f"O'Brien-Fleming-type alpha spending over {len(looks)} look{'s' * (len(looks) != 1)}, "
           f"{alpha:.0%} over all looks and {cpus_total} CPUs")
    if not open_:
        return (f"no {'other ' * others}CPU is slower than the rest by {min_effect:.0%} or more: each one's repeated interval "
                f"lies below +{min_effect:.0%} ({how})")
    which = ", ".join(map(str, open_))
    head = f"cannot tell whether CPU{'s' * (len(open_) > 1)} {which} {'are' if len(open_) > 1 else 'is'} slower " \
           f"than the rest by {min_effect:.0%} or more"
    if not seq["final"]:
        return f"{head}: stopped at {nb} blocks ({rounds} rounds) before a decision ({how})"
    need_b, need_r = seq.get("needs_blocks") or 2 * nb, seq.get("needs_runs") or 2 * rounds
    pace = f", ~{_duration(seq['needs_s'])} at this scan's pace" if seq.get("needs_s") else ""
    return (f"{head} within the budget ({nb} blocks, {rounds} rounds): about {need_b} blocks ({need_r} rounds"
            f"{pace}) would decide it; --until-decided --max-runs {need_r} --max-time "
            f"{math.ceil(seq['needs_s'] or 600)} ({how})")


def _duration(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"
