"""Time as evidence in a per-core scan: blocks, how long a CPU's slowness holds, the block test.

On a virtual machine a vCPU's speed is a state of the host that holds for seconds and moves (a
16-vCPU KVM guest: a vCPU's fast state held about a second, its within-speed level about ten);
a scan shorter than such a state cannot tell a slow core from a moment. So the scan spreads its
rounds over time in blocks (``--blocks``, ``--span``), and:

- ``levels``: a CPU's level in a block is the median of its per-round log-ratios there.
- ``block_test``: per CPU a one-sided t-test of the median of its block levels (one block of
  contention cannot carry it; its SD from ``median_se``) against log(1 + min_effect) (the null:
  slower by min_effect at most, so a level of the moment a few per cent up in every block is not
  enough on its own); the analysis uses it where the scan shows states that hold (``hold``:
  round-to-round or block-to-block correlation), and the round rule's sign test where it shows
  none (rounds are then independent draws), with
  the spread of block levels around each CPU's own mean pooled over the CPUs (one-way ANOVA's
  error variance, sum of squares over sum(blocks - 1); not robust, so a block of contention
  widens it for all: conservative), or where larger the variance of a block median that the
  rounds inside the blocks give (pi/2 x their robust variance / n, with their many degrees of
  freedom: 2 CPUs give the block-to-block estimate only B - 1), and degrees of freedom
  (m - 1)/m x sum(blocks - 1) (the leave-one-out ratios of m CPUs share m - 1 degrees of freedom
  per round). Blocks further apart than the machine's states hold are independent draws of
  them, so a state of the moment is a block-to-block variance here, not a persistent level.
- ``hold``: how long the machine's per-CPU slowness holds, two ways: the pooled lag-1
  autocorrelation of each CPU's round ratios around its own median, inside blocks (an
  exponential correlation time -dt / ln rho, dt the median time between rounds), and the rank
  correlation (Spearman) over CPUs of the block levels of consecutive blocks, leaving out the
  CPUs the block test finds, averaged over block pairs; significant when
  mean rho x sqrt(m' - 1) x sqrt(B - 1) > 2.33 (one-sided 1 %, rho's null SD 1/sqrt(m' - 1)).
  The scan *tells* a slow core from a state when the states do not hold from block to block.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from perflab.studies.base import decode
from perflab.studies.cores.detect import median_se

BLOCK_Z = 2.33  # one-sided 1 %: the block-to-block rank correlation that says "states held"
MIN_CPUS_FOR_RANKS = 5  # fewer CPUs: no rank correlation over CPUs, the round correlation alone
MIN_ROUND_PAIRS = 10  # pairs of consecutive rounds inside blocks: fewer, no round correlation
# A state longer than the scan looks like a property of the CPU and shows in neither correlation,
# so the blocks must also span more than the longest state seen: two or three vCPUs of a 16-vCPU
# KVM guest held their speed for whole 10-second scans (the recorded kvm16 campaigns).
MIN_SPAN_S = 10.0


@dataclass
class Block:
    index: int
    rounds: tuple[int, int]  # first and last round number
    start_s: float  # seconds from the scan's first run (NaN where the runs carry no times)
    end_s: float


@dataclass
class Timeline:
    blocks: list[Block] = field(default_factory=list)
    span_s: float = math.nan  # first run's start to the last run's end
    gap_s: float = math.nan  # shortest time between the starts of consecutive blocks
    round_dt_s: float = math.nan  # median time between consecutive rounds
    round_corr: float | None = None  # pooled lag-1 autocorrelation of round ratios (inside blocks)
    hold_s: float | None = None  # correlation time from round_corr (None: shorter than a round)
    block_corr: float | None = None  # mean Spearman correlation of block levels, consecutive blocks
    block_cpus: int = 0  # CPUs that block_corr is taken over
    held: bool = False  # the machine's per-CPU states held from block to block
    tells: bool = False  # the scan tells a slow core from a state of the moment
    why: str = ""  # why it cannot, in words a user acts on

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Timeline":
        return decode(cls, d)

    def block_text(self, indices: Sequence[int]) -> str:
        """'block 1 (0-3 s)' / 'blocks 1, 3 (0-3 s, 61-64 s)': numbered from 1, with their times."""
        bs = [self.blocks[i] for i in indices]
        times = ", ".join(_when(b) for b in bs)
        label = "block" if len(bs) == 1 else "blocks"
        return f"{label} {', '.join(str(b.index + 1) for b in bs)}" + (f" ({times})" if times else "")


def _when(b: Block) -> str:
    if math.isnan(b.start_s):
        return f"rounds {b.rounds[0]}-{b.rounds[1]}"
    return f"{b.start_s:.0f}-{b.end_s:.0f} s"


def split_blocks(blocks_of_rounds: Sequence[int], n_blocks: int) -> list[int]:
    """Block index per round: as given, or (stored runs without one) equal shares in round order."""
    if all(b >= 0 for b in blocks_of_rounds):
        return list(blocks_of_rounds)
    n = len(blocks_of_rounds)
    return [min(n_blocks - 1, i * n_blocks // max(n, 1)) for i in range(n)]


def after_pause(block_of: Sequence[int], times) -> set[int]:
    """Blocks (by index) that began after the scan paused: the time from the previous block's
    last round to their first is more than 1 s and more than 5 rounds' worth (``--span`` waits
    between blocks). Without round times (stored runs that carry none): none."""
    import numpy as np

    t = np.asarray(times, dtype=float)
    if t.size < 2 or not np.isfinite(t).all():
        return set()
    step = float(np.median(np.diff(t)))
    out = set()
    for j in range(1, len(block_of)):
        if block_of[j] != block_of[j - 1] and t[j] - t[j - 1] > max(1.0, 5 * step):
            out.add(block_of[j])
    return out


def leading(rounds_in: Sequence[int], block_of: Sequence[int], paused: set[int], marked: set[int]) -> tuple[int, ...]:
    """The marked rounds that open a block begun after a pause, each block's unbroken leading run of
    them while it is under half the block's rounds (``rounds_in``: the round numbers, in order,
    with ``block_of`` their blocks): a CPU whose slowness was away for a moment after each pause."""
    out: list[int] = []
    for b in sorted(paused):
        mine = [r for r, bb in zip(rounds_in, block_of) if bb == b]
        run = 0
        while run < len(mine) and mine[run] in marked:
            run += 1
        if 0 < run and 2 * run < len(mine):
            out += mine[:run]
    return tuple(out)


def levels(d, block_of):
    """(CPUs x blocks) median of each CPU's log-ratios in each block (NaN where none)."""
    import numpy as np

    nb = max(block_of) + 1 if len(block_of) else 0
    out = np.full((d.shape[0], nb), np.nan)
    bo = np.asarray(block_of)
    for b in range(nb):
        cols = d[:, bo == b]
        have = ~np.isnan(cols).all(axis=1)
        if have.any():
            out[have, b] = np.nanmedian(cols[have], axis=1)
    return out


def block_test(lv, d=None, block_of=None, margin: float = 0.0) -> tuple[list[float], list[float], float, float]:
    """(p per CPU, t per CPU, SD of a block level, degrees of freedom): the module docstring's
    t-test of mean level <= margin (log(1 + min_effect)). p is 1 (t NaN) where a CPU has fewer
    than 2 blocks."""
    import numpy as np
    from scipy.special import stdtr  # Student's t CDF (scipy.special: a fraction of scipy.stats' import)

    m = lv.shape[0]
    nb = (~np.isnan(lv)).sum(axis=1)
    mean = np.array([np.nanmean(r) if k else np.nan for r, k in zip(lv, nb)])
    df = (m - 1) / m * float(np.clip(nb - 1, 0, None).sum()) if m > 1 else 0.0
    resid = (lv - mean[:, None])[(nb >= 2)[:, None] & ~np.isnan(lv)]
    if resid.size == 0 or df <= 0:
        return [1.0] * m, [math.nan] * m, math.nan, 0.0
    # the pooled within-CPU variance (one-way ANOVA's error term): not robust, so a block of
    # contention widens it for every CPU (conservative); robust scales (MAD) were anti-conservative
    # in the tail with 3 blocks a CPU
    s = math.sqrt(float((resid ** 2).sum()) / float(np.clip(nb - 1, 0, None).sum())) or 1e-12
    if d is not None:
        # What the rounds inside the blocks say a block median varies by (pi/2 x the round
        # variance over n, the median's), with its many degrees of freedom: used where it is the
        # larger (few CPUs give the block-to-block estimate a handful of degrees of freedom).
        bo = np.asarray(block_of)
        dev = np.concatenate([(d[:, bo == b] - lv[:, b:b + 1]).ravel() for b in range(lv.shape[1])])
        dev = dev[~np.isnan(dev)]
        n_b = float(np.mean([(~np.isnan(d[:, bo == b])).sum(axis=1).mean() for b in range(lv.shape[1])]))
        if dev.size > 2 * m * lv.shape[1] and n_b >= 2:
            within = 1.4826 * float(np.median(np.abs(dev))) * math.sqrt(math.pi / (2 * n_b))
            if within > s:
                s, df = within, (m - 1) / m * (dev.size - m * lv.shape[1])
    ps, ts = [], []
    for row, k in zip(lv, nb):
        if k < 2:
            ps.append(1.0)
            ts.append(math.nan)
            continue
        t = float((float(np.nanmedian(row)) - margin) / (s * median_se(int(k))))
        ts.append(t)
        ps.append(float(stdtr(max(df, 1.0), -t)))
    return ps, ts, s, df


def _spearman(a, b) -> float:
    import numpy as np

    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    if ra.std() == 0 or rb.std() == 0:
        return 0.0
    return float(np.corrcoef(ra, rb)[0, 1])


def hold(d, block_of, times, lv, found: Sequence[int], round_ids: Sequence[int]) -> Timeline:
    """The Timeline of a scan: its blocks with their times, and how long per-CPU slowness held
    (module docstring); ``found`` are the rows the block test found, left out of the rank
    correlation so that a slow core does not count as the machine's state."""
    import numpy as np

    bo = np.asarray(block_of)
    t = np.asarray(times, dtype=float)
    tl = Timeline()
    known = bool(t.size) and not np.isnan(t).any()
    rounds = np.arange(d.shape[1])
    dt = _dt(t) if known else math.nan
    for b in range(lv.shape[1]):
        idx = rounds[bo == b]
        if idx.size == 0:
            continue
        tl.blocks.append(Block(b, (int(round_ids[idx[0]]), int(round_ids[idx[-1]])),
                               float(t[idx[0]]) if known else math.nan,
                               float(t[idx[-1]] + dt) if known else math.nan))
    if known and t.size:
        tl.round_dt_s = dt
        tl.span_s = float(t[-1] - t[0] + tl.round_dt_s)
        starts = [b.start_s for b in tl.blocks]
        tl.gap_s = float(min(np.diff(starts))) if len(starts) > 1 else 0.0
    # round to round, inside blocks
    resid = d - np.nanmedian(np.where(np.isnan(d).all(axis=1, keepdims=True), 0, d), axis=1, keepdims=True)
    same = bo[1:] == bo[:-1]
    a, b2 = resid[:, :-1][:, same].ravel(), resid[:, 1:][:, same].ravel()
    ok = ~np.isnan(a) & ~np.isnan(b2)
    if ok.sum() >= MIN_ROUND_PAIRS and a[ok].std() > 0 and b2[ok].std() > 0:
        rho = float(np.corrcoef(a[ok], b2[ok])[0, 1])
        tl.round_corr = rho
        if rho > 2 / math.sqrt(ok.sum()) and not math.isnan(tl.round_dt_s):
            tl.hold_s = -tl.round_dt_s / math.log(min(rho, 0.999))
    # block to block, over the CPUs the block test did not find
    keep = [i for i in range(lv.shape[0]) if i not in set(found)]
    pairs = []
    for b in range(lv.shape[1] - 1):
        x, y = lv[keep, b], lv[keep, b + 1]
        ok2 = ~np.isnan(x) & ~np.isnan(y)
        if ok2.sum() >= MIN_CPUS_FOR_RANKS:
            pairs.append((_spearman(x[ok2], y[ok2]), int(ok2.sum())))
    if pairs:
        tl.block_corr = float(np.mean([p for p, _ in pairs]))
        tl.block_cpus = min(k for _, k in pairs)
        z = tl.block_corr * math.sqrt(tl.block_cpus - 1) * math.sqrt(len(pairs))
        tl.held = z > BLOCK_Z
    _judge(tl)
    return tl


def _dt(t) -> float:
    import numpy as np

    return float(np.median(np.diff(t))) if len(t) > 1 else 0.0


def _judge(tl: Timeline) -> None:
    """Can the scan tell a slow core from a state of the moment? Only on evidence: the blocks span
    more than the longest state seen (MIN_SPAN_S), the scan measured how long this machine's states
    hold (round or block correlation), and they do not hold from block to block. Else why not, in
    words a user acts on."""
    nb = len(tl.blocks)
    span = f"{tl.span_s:.0f} s" if not math.isnan(tl.span_s) else "the scan"
    starts = [b.start_s for b in tl.blocks]
    spread = starts[-1] - starts[0] if nb and all(not math.isnan(x) for x in starts) else math.nan
    if nb < 2:
        tl.why = (f"the scan ran in one block ({span}), so it cannot tell a slow core from a state of "
                  "the machine that held that long; scan with --blocks 3 --span 60 or more")
    elif tl.held:
        tl.why = (f"CPU speeds held from block to block across {span} (rank correlation "
                  f"{tl.block_corr:.2f} of the other {tl.block_cpus} CPUs' levels between blocks): "
                  f"scan longer (--span {max(120, 4 * round(tl.span_s)) if not math.isnan(tl.span_s) else 600:.0f}) "
                  "or scan again later")
    elif tl.hold_s is not None and not math.isnan(tl.gap_s) and tl.hold_s >= tl.gap_s:
        tl.why = (f"a CPU's slowness held about {tl.hold_s:.0f} s (round-to-round correlation "
                  f"{tl.round_corr:.2f}), as long as the {tl.gap_s:.0f} s between blocks: scan longer "
                  f"(--span {max(120, 3 * nb * round(tl.hold_s)):.0f}) or scan again later")
    elif not math.isnan(spread) and spread < MIN_SPAN_S:
        tl.why = (f"its {nb} blocks start within {spread:.1f} s, and a virtual CPU's speed has been seen to "
                  f"hold for {MIN_SPAN_S:.0f} s and more: scan with --span 60 (the default) or more")
    elif tl.round_corr is None and tl.block_corr is None:
        tl.why = (f"too few rounds to show how long this machine's states hold (fewer than {MIN_ROUND_PAIRS} "
                  f"pairs of consecutive rounds inside blocks, and fewer than {MIN_CPUS_FOR_RANKS} CPUs to "
                  "rank between blocks): scan with --rounds 12 or more")
    else:
        tl.tells = True
