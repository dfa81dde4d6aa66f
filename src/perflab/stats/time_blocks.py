"""Slow members judged on runs of the same time: the common window in time blocks, a test across blocks.

Members (a platform's hosts) that ran at overlapping times share whatever else loaded them at
each moment; compared on whole campaigns, a member whose runs went on after its peers had
finished (alone, faster) or that met a busy minute its peers missed differs by the time, not by
itself. So, per group:

- **together** (at least 3 members ran at once): the most members whose run windows share a
  stretch of time are compared, the others left out (a job that ran before the rest started);
  only runs whose midpoint lies in their common window (the latest first start to the earliest
  last end among them) count; the window is cut into B
  blocks of equal time (at most ``max_blocks``, every member with at least ``min_runs`` runs in
  every block). A member's level in a block is the median of its log values there; its
  difference d_b is that level minus the median of its peers' levels in the same block. Per
  member a one-sided t-test of the mean of its d_b (H0: not below its peers), with the spread of
  the d_b around each member's own mean pooled over the members (one-way ANOVA's error
  variance; not robust, so one block of contention widens it for all: conservative), or where
  larger the variance of a block median that the runs inside the cells give; degrees of freedom
  (m - 1)(B - 1) (the differences of m members to their peers share m - 1 per block), both
  scaled by the blocks' lag-1 autocorrelation (states longer than a block). A state of the
  machine that holds for the whole window (one node's share of the CPUs) moves a member's mean
  without showing in its blocks: the variance of its mean is that block noise plus the spread of
  its peers' mean levels (a random member-in-window effect, their block noise counted again:
  conservative), Satterthwaite's degrees of freedom; a window longer than such states hold is
  what shrinks it. **Holm**
  over every member tested. Slow: Holm p < alpha, the ratio exp(mean d) at most 1 - min_effect,
  its t interval below 1, and below its peers in **every** third of the window (its median
  there against its peers' medians; thirds, not blocks, because a block median of two or three
  runs flips with one lucky run): a member busy in one stretch only is not slow, and a run after
  the window (a tail run alone) counts for nothing.
- **window** (the common window holds too few runs of a member for 2 blocks): the runs inside
  it, each member's against its peers' pooled (perflab.stats.peers: Mann-Whitney U), its p-value
  in the same Holm correction.
- **apart** (the windows do not all overlap, e.g. one node at a time): no run of one member has a
  peer's run of the same time, so a member's level (the median of its log values) is judged
  against the spread of its peers' levels, which carries whatever changed between their windows:
  a prediction t-test (mean of k peer levels, their SD, df k - 1) with Holm. It takes a large
  gap to clear that with few peers; ``GroupTime.detectable`` is the smallest slowdown it can name.
- **rounds** (the members were measured in visits, each visit's runs carrying its round, and every
  member has a visit in at least 2 of the same rounds): each round a comparison of its own, a
  member's level there against its peers' levels there, a t-test over the rounds with Holm
  (perflab.stats.rounds). Chosen whenever the runs carry rounds: a member's visits span the
  whole measurement with gaps, so its window says nothing of when it ran.

What it does not show: that unflagged members are equal, or why a member is slow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from perflab.stats.cells import cell_var as _cell_var, pooled as _pooled
from perflab.stats.comparison import holm
from perflab.stats.peers import PeerTest, slow_members
from perflab.stats.rounds import MIN_ROUNDS, common_rounds, judge_rounds

MAX_BLOCKS = 8
MIN_RUNS = 2  # runs of every member in every block (a block median of 2 is their mean)
PARTS = 3  # the window's parts a slow member is below its peers in, every one


@dataclass(frozen=True)
class TimedRuns:
    """One member's runs: start and end (seconds on a time axis shared by the group), value (higher
    is better), and where it was measured in visits, each run's round (empty: one visit)."""

    starts: Sequence[float]
    ends: Sequence[float]
    values: Sequence[float]
    rounds: Sequence[int] = ()


@dataclass(frozen=True)
class TimedTest(PeerTest):
    """A PeerTest with its time evidence: per-block ratios to the peers, blocks below them, runs left out."""

    block_ratios: tuple[float, ...] = ()
    blocks_below: int = 0
    part_ratios: tuple[float, ...] = ()  # per third of the window: the persistence rule
    parts_below: int = 0
    outside: int = 0  # runs outside the common window, not compared
    held: bool = False  # its peers' spread weighed more than its block noise in its standard error


@dataclass
class GroupTime:
    """How a group was judged: together (window, blocks), in rounds of visits, or apart, and why."""

    mode: str  # "together" | "window" | "rounds" | "apart" | "untested"
    window: tuple[float, float] | None = None
    blocks: list[tuple[float, float]] = field(default_factory=list)
    df: float | None = None
    detectable: float | None = None  # the smallest slowdown the test names (fraction; window: None)
    why: str = ""
    left_out: list[str] = field(default_factory=list)  # together: ran outside the window the others shared
    # window: each member's values inside the window, and how many runs it had outside
    window_values: dict[str, list[float]] = field(default_factory=dict, repr=False)
    outside: dict[str, int] = field(default_factory=dict)
    rounds: list[int] = field(default_factory=list)  # rounds: the rounds compared (every member visited)


def _block_rho(d) -> float:
    """Pooled lag-1 autocorrelation of each member's block differences about its own mean, bias
    corrected by 1/B, in [0, 0.9]."""
    e = d - d.mean(axis=1, keepdims=True)
    den = float((e * e).sum())
    if den <= 0 or d.shape[1] < 3:
        return 0.0
    r = float((e[:, :-1] * e[:, 1:]).sum()) / den + 1.0 / d.shape[1]
    return min(0.9, max(0.0, r))


def _blocks(runs: Mapping[str, TimedRuns], lo: float, hi: float, max_blocks: int, min_runs: int):
    """(B, per member the block index of each run in [lo, hi) by midpoint or -1) with every cell
    holding min_runs runs, B as large as allowed; B = 0 when not even 2 blocks do."""
    import numpy as np

    mids = {k: (np.asarray(r.starts, float) + np.asarray(r.ends, float)) / 2.0 for k, r in runs.items()}
    for b in range(max_blocks, 1, -1):
        width = (hi - lo) / b
        idx = {}
        for k, mid in mids.items():
            i = np.floor((mid - lo) / width).astype(int)
            i[(mid < lo) | (mid > hi)] = -1
            i[(mid == hi)] = b - 1
            idx[k] = i
        if all(np.count_nonzero(i == j) >= min_runs for i in idx.values() for j in range(b)):
            return b, idx
    return 0, {k: np.where((m >= lo) & (m <= hi), 0, -1) for k, m in mids.items()}


def _most_together(starts: dict[str, float], ends: dict[str, float]) -> set[str]:
    """The most members whose run windows share a stretch of time (the longest such stretch among
    sets of that size): those running at the latest start of some member, a member that started
    before all of them or ran alone after them left out."""
    best: tuple[int, float] = (0, -math.inf)
    out: set[str] = set(starts)
    for t in sorted(set(starts.values())):
        here = {k for k in starts if starts[k] <= t < ends[k]}
        if not here:
            continue
        score = (len(here), min(ends[k] for k in here) - t)
        if score > best:
            best, out = score, here
    return out


def _named_at(errors, alpha: float) -> float:
    """The slowdown a member's test names at the study's alpha (Bonferroni over the members, as
    Holm's first step), the median over the members of 1 - exp(-t x SE): what a "no slow host"
    could have seen."""
    import numpy as np
    from scipy import stats as st

    errors = list(errors)
    m = max(len(errors), 1)
    out = [1.0 - math.exp(-float(st.t.ppf(1.0 - alpha / m, max(df, 1.0))) * se) if not math.isnan(se) else 1.0
           for se, df in errors]
    return float(np.median(out)) if out else 1.0


@dataclass(frozen=True)
class MemberDiff:
    """One member against its peers as its group's mode judged it: the mean of its log differences
    to them (negative: below them), that mean's standard error and degrees of freedom."""

    mean: float
    se: float
    df: float
    blocks: tuple[float, ...] = ()  # per time block (together) or round (rounds): its difference there
    parts: tuple[float, ...] = ()  # per third of the window or of the rounds: the persistence rule
    outside: int = 0  # runs not compared: outside the common window, or in a round not every member visited
    held: bool = False  # together: its peers' spread weighed more than its block noise in its standard error


def judge_group(runs: Mapping[str, TimedRuns], max_blocks: int = MAX_BLOCKS, min_runs: int = MIN_RUNS,
                alpha: float = 0.05) -> tuple[dict[str, MemberDiff], GroupTime]:
    """Each member's difference to its peers, and how the group was judged (the module docstring's
    modes: rounds, together, window, apart; untested below 3 members of 2 runs). ``alpha``: the
    level at which ``GroupTime.detectable`` names the smallest slowdown. The window mode leaves the
    test to perflab.stats.peers: no member's difference, the runs in ``GroupTime.window_values``."""
    import numpy as np

    names = [k for k, r in runs.items() if len(r.values) >= 2]
    if len(names) < 3:
        return {}, GroupTime("untested", why=f"{len(names)} with 2 runs or more: each needs 2 peers")
    why = ""
    if all(len(runs[k].rounds) == len(runs[k].values) > 0 for k in names):
        used = common_rounds({k: runs[k].rounds for k in names})
        if len(used) >= MIN_ROUNDS:
            return _in_rounds(runs, names, used, alpha)
        # Visits pooled span the whole measurement with gaps: no window of theirs is a time they
        # shared, so they are judged apart.
        why = (f"they were measured in visits, but only {len(used)} round(s) hold a visit of every one of "
               f"them (each needs {MIN_ROUNDS}): the visits of a host are pooled")
        return _apart(runs, names, alpha, why)
    starts = {k: float(np.min(runs[k].starts)) for k in names}
    ends = {k: float(np.max(runs[k].ends)) for k in names}
    together = _most_together(starts, ends)
    lo, hi = max(starts[k] for k in together), min(ends[k] for k in together)
    if not (hi > lo and len(together) >= 3):
        return _apart(runs, names, alpha, "their run windows do not all overlap")
    left_out = [k for k in names if k not in together]
    inside = [k for k in names if k in together]
    b, idx = _blocks({k: runs[k] for k in inside}, lo, hi, max_blocks, min_runs)
    if b >= 2:
        return _together(runs, inside, idx, b, (lo, hi), left_out, alpha)
    if all(np.count_nonzero(idx[k] >= 0) >= 2 for k in inside):
        # Too short for blocks, long enough for runs: the runs inside the window, pooled.
        return {}, GroupTime(
            "window", (lo, hi), why=(f"the window they ran in together ({hi - lo:.1f} s) holds too few runs "
                                     f"of one of them for 2 time blocks of {min_runs}"),
            left_out=left_out, outside={k: int(np.count_nonzero(idx[k] < 0)) for k in inside},
            window_values={k: np.asarray(runs[k].values, float)[idx[k] >= 0].tolist() for k in inside})
    return _apart(runs, names, alpha, f"the common window ({hi - lo:.1f} s) holds fewer than {2 * min_runs} runs "
                                      "of one of them: too few for 2 time blocks")


def _in_rounds(runs: Mapping[str, TimedRuns], names: list[str], used: list[int],
               alpha: float) -> tuple[dict[str, MemberDiff], GroupTime]:
    """Rounds: each round a comparison of its own (perflab.stats.rounds), over the rounds ``used``
    that every member visited; a run of another round is counted as outside."""
    import numpy as np

    res, df = judge_rounds({k: np.log(np.asarray(runs[k].values, float)) for k in names},
                           {k: runs[k].rounds for k in names}, used)
    keep = set(used)
    out = {k: MemberDiff(mean, se, d, diffs, parts, sum(1 for x in runs[k].rounds if int(x) not in keep))
           for k, (mean, se, d, diffs, parts) in res.items()}
    return out, GroupTime("rounds", df=df, rounds=used,
                          detectable=_named_at(((v.se, v.df) for v in out.values()), alpha))


def _together(runs: Mapping[str, TimedRuns], names: list[str], idx: Mapping[str, Any], b: int,
              window: tuple[float, float], left_out: list[str],
              alpha: float) -> tuple[dict[str, MemberDiff], GroupTime]:
    """Together: the members ``names`` in the common ``window`` cut into ``b`` blocks (``idx``: each
    run's block, -1 outside), a t-test of each member's mean block difference (module docstring)."""
    import numpy as np

    lo, hi = window
    logs = {k: np.log(np.asarray(runs[k].values, float)) for k in names}
    level = np.array([[np.median(logs[k][idx[k] == j]) for j in range(b)] for k in names])
    cvar = np.array([[_cell_var(logs[k][idx[k] == j]) for j in range(b)] for k in names])
    m = len(names)
    peers = np.array([np.median(np.delete(level, i, axis=0), axis=0) for i in range(m)])
    d = level - peers
    # Var(level - median of m-1 peer levels) from the runs: the member's cell plus its
    # peers' (a median's variance, pi/2 / (m-1) of one cell's, as for the runs inside).
    cells = cvar * (1.0 + math.pi / 2.0 / (m - 1))
    var, df = _pooled(d, cells)
    # States that hold longer than a block make neighbouring blocks alike: the mean of B
    # blocks then varies as that of fewer. The pooled lag-1 autocorrelation of the block
    # residuals (+1/B: residuals about their own mean lean negative) inflates the variance
    # (1 + rho) / (1 - rho) and shrinks the degrees of freedom alike (AR(1) effective size).
    rho = _block_rho(d)
    inflate = (1.0 + rho) / (1.0 - rho)
    df = max(1.0, df / inflate)
    se = math.sqrt(var / b * inflate)
    width = (hi - lo) / b
    # The persistence rule on coarser parts (thirds) of the window: a block median of two
    # or three runs flips with one lucky run; a third's median of a dozen does not.
    parts = min(PARTS, b)
    part_of = {k: np.where(idx[k] >= 0, idx[k] * parts // b, -1) for k in names}
    plevel = np.array([[np.median(logs[k][part_of[k] == j]) for j in range(parts)] for k in names])
    pd = plevel - np.array([np.median(np.delete(plevel, i, axis=0), axis=0) for i in range(m)])
    # States that hold for the whole window (one node's share of the CPUs): the member's
    # own mean may carry one, which its blocks cannot show. Its variance is the block
    # noise of its mean plus the spread of its peers' means (their states, and their
    # block noise once more: conservative), with Satterthwaite's degrees of freedom. No
    # pre-test chooses between the two (in a model of per-node states holding 2-30 s, an
    # F test at 5 % choosing left 4-20 % of null platforms with a false slow host).
    means = d.mean(axis=1)
    # The peers' spread from their own levels: a per-block reference shifts every peer
    # alike, so the variance of their mean levels is that of their differences to any
    # reference without the member (whose slowness would otherwise move theirs).
    own = level.mean(axis=1)
    out: dict[str, MemberDiff] = {}
    for i, k in enumerate(names):
        # Its difference is to the median of m - 1 peers: a state of theirs moves that
        # reference too (a median's variance, pi/2 / (m - 1) of one's), as in a prediction.
        spread = float(np.var(np.delete(own, i), ddof=1)) * (1.0 + math.pi / 2.0 / (m - 1))
        a = se * se
        tot = a + spread
        dfs = tot * tot / (a * a / df + spread * spread / (m - 2))
        out[k] = MemberDiff(float(means[i]), math.sqrt(tot), dfs,
                            tuple(float(x) for x in d[i]), tuple(float(x) for x in pd[i]),
                            int(np.count_nonzero(idx[k] < 0)),
                            held=spread > a)  # the peers' states weigh more than the block noise
    return out, GroupTime("together", (lo, hi), [(lo + j * width, lo + (j + 1) * width) for j in range(b)],
                          df, left_out=left_out, detectable=_named_at(((v.se, v.df) for v in out.values()), alpha))


def _apart(runs: Mapping[str, TimedRuns], names: list[str], alpha: float,
           why: str) -> tuple[dict[str, MemberDiff], GroupTime]:
    """Apart: a member's level (median log value) against the spread of its peers' levels, window
    effects included: a prediction t-test, df k - 1 for k peers."""
    import numpy as np
    from scipy import stats as st

    level = {k: float(np.median(np.log(np.asarray(runs[k].values, float)))) for k in names}
    out = {}
    k_peers = len(names) - 1
    sds = []
    for k in names:
        p = np.array([level[j] for j in names if j != k])
        sd = float(np.std(p, ddof=1))
        sds.append(sd)
        out[k] = MemberDiff(level[k] - float(p.mean()), sd * math.sqrt(1.0 + 1.0 / k_peers), float(k_peers - 1))
    tq = float(st.t.ppf(1.0 - alpha / len(names), k_peers - 1))  # the slowdown named at the study's alpha
    detectable = 1.0 - math.exp(-tq * float(np.median(sds)) * math.sqrt(1.0 + 1.0 / k_peers))
    return out, GroupTime("apart", df=float(k_peers - 1), detectable=detectable, why=why)


def slow_by_time(
    groups: Mapping[str, Mapping[str, TimedRuns]],
    alpha: float = 0.05,
    min_effect: float = 0.03,
    confidence: float = 0.95,
    max_blocks: int = MAX_BLOCKS,
    min_runs: int = MIN_RUNS,
) -> tuple[list[TimedTest], dict[str, GroupTime]]:
    """Every member against its group's peers on runs of the same time (module docstring); Holm over
    every member tested in every group."""
    import numpy as np
    from scipy import stats as st

    if not 0.0 < alpha < 1.0 or not 0.0 < confidence < 1.0 or not 0.0 <= min_effect < 1.0:
        raise ValueError("alpha and confidence must lie in (0, 1), min_effect in [0, 1)")
    raw: list[tuple[TimedTest, float | None]] = []
    times: dict[str, GroupTime] = {}
    for group, members in groups.items():
        res, gt = judge_group(members, max_blocks, min_runs, alpha)
        times[group] = gt
        if gt.mode == "window":
            # Runs inside the window, each member's against its peers' pooled (perflab.stats.peers),
            # its p-value corrected with every other member's below.
            for t in slow_members({group: gt.window_values}, alpha=alpha, min_effect=min_effect,
                                  confidence=confidence):
                raw.append((TimedTest(**{**t.__dict__, "p_adjusted": None, "slow": False},
                                      outside=gt.outside.get(t.member, 0)), t.p_value))
            for name in members:
                if name not in gt.window_values:
                    vals = np.asarray(members[name].values, float)
                    raw.append((TimedTest(name, group, int(vals.size), float(np.median(vals)) if vals.size
                                          else math.nan, None, None, None, None, None, None), None))
            continue
        for name, r in members.items():
            vals = np.asarray(r.values, float)
            med = float(np.median(vals)) if vals.size else math.nan
            diff = res.get(name)
            if diff is None or not (diff.se > 0 and diff.df >= 1):
                raw.append((TimedTest(name, group, int(vals.size), med, None, None, None, None, None, None), None))
                continue
            p = float(st.t.cdf(diff.mean / diff.se, diff.df))
            tq = float(st.t.ppf(1.0 - (1.0 - confidence) / 2.0, diff.df))
            ratio = math.exp(diff.mean)
            raw.append((TimedTest(name, group, int(vals.size), med, med / ratio, ratio,
                                  math.exp(diff.mean - tq * diff.se), math.exp(diff.mean + tq * diff.se), confidence, p,
                                  block_ratios=tuple(math.exp(x) for x in diff.blocks),
                                  blocks_below=sum(1 for x in diff.blocks if x < 0),
                                  part_ratios=tuple(math.exp(x) for x in diff.parts),
                                  parts_below=sum(1 for x in diff.parts if x < 0),
                                  outside=diff.outside, held=diff.held), p))
    tested = [(i, p) for i, (_, p) in enumerate(raw) if p is not None]
    adjusted = holm([p for _, p in tested])
    out = [t for t, _ in raw]
    for (i, _), pa in zip(tested, adjusted):
        t = out[i]
        # Together: below in every third of the window; in rounds: in every round (third of them).
        every = times[t.group].mode not in ("together", "rounds") or t.parts_below == len(t.part_ratios)
        slow = (pa < alpha and t.high is not None and t.high < 1.0 and t.ratio is not None
                and t.ratio <= 1.0 - min_effect and every)
        out[i] = TimedTest(**{**t.__dict__, "p_adjusted": pa, "slow": slow})
    return out, times

