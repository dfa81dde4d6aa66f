"""Which N is the optimum of one policy's scan: the smallest N not significantly below the best.

The highest median alone is no answer: among points whose throughput is equal (a machine that
gains nothing past its CPU count) the sample picks one at random, and in simulations at 3 %
noise it picked an N past the CPU count in 122 of 200 campaigns. The rule, in two steps:

1. **Past the CPU count.** A point with more copies than the machine has CPUs for (``capacity``
   = usable CPUs / threads per copy) is a candidate only if it is significantly better than
   ``ref``, the highest median at or below the capacity: one-sided exact Mann-Whitney tests
   (Mann & Whitney 1947) of each such point against ``ref``, Holm-corrected over those points
   (Holm 1979). Comparing with the sample best at or below the capacity is conservative: that
   best is the maximum of its sample medians, so a point past it must beat its luck too.
2. **The smallest N not significantly below the best.** ``best`` is the highest median of the
   candidates (the points at or below the capacity, or the ones past it that gained). Going up
   from the smallest N, each is tested "below ``best``" (one-sided exact Mann-Whitney) at alpha
   and the first not significantly below is the optimum: a fixed-sequence procedure, whose
   pre-set order (ascending N) keeps the familywise error at alpha without dividing it
   (Maurer, Hothorn & Lehmacher 1995), so a 256-CPU scan with 5 rounds can still tell N = 1
   from the best.

Two speeds (stats.speeds): where the pooled rounds of the two points run at two speeds, each
test is van Elteren's within the speeds (one-sided, from its Z) instead of Mann-Whitney's on the
mixture. Each test carries the ratio of the two points (exp of the Hodges-Lehmann shift of the logs) and
Moses' interval at its achieved level (``stats.shift.ratio_ci``, 90 % asked: the two-sided
interval that matches a one-sided test at 0.05). A point with fewer than ``MIN_ROUNDS`` rounds
(too few for any such test to reach alpha) is left out of the ranking; a scan with none left has
no optimum and says "not enough evidence".
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any, Mapping, Sequence

from perflab.stats import CI, holm, median
from perflab.stats.shift import ratio_ci, u_cdf, u_cdf_exact
from perflab.stats.speeds import within_speeds, worth_looking
from perflab.studies.base import decode
from perflab.studies.run.result import level_text

ALPHA = 0.05
RATIO_LEVEL = 0.90


def min_rounds(alpha: float = ALPHA) -> int:
    """The fewest rounds m per point with which m against m can be significant one-sided:
    the smallest one-sided exact Mann-Whitney p is 1 / C(2m, m) (m = 3: 0.05, never below)."""
    m = 1
    while 1 / math.comb(2 * m, m) >= alpha:
        m += 1
    return m


MIN_ROUNDS = min_rounds()  # 4 at alpha 0.05


@lru_cache(maxsize=256)
def _u_cdf(m: int, n: int) -> tuple[float, ...]:
    return tuple(u_cdf_exact(m, n) if m * n <= 400 else (float(x) for x in u_cdf(m, n)))


def mw_greater(a: Sequence[float], b: Sequence[float]) -> float:
    """One-sided exact Mann-Whitney p of "a tends to be larger than b": P(U >= U_observed).

    Ties count 1/2 in U; U is rounded down before the tail is read, which keeps p conservative.
    """
    u = sum(1.0 if x > y else 0.5 if x == y else 0.0 for x in a for y in b)
    k = math.floor(u)
    if k <= 0:
        return 1.0
    return min(1.0, max(0.0, 1.0 - _u_cdf(len(a), len(b))[k - 1]))


@dataclass
class Step:
    """One test behind the optimum: point ``n`` against point ``against``."""

    n: int
    against: int
    kind: str  # "past": n (past the CPU count) significantly above `against`?; "below": n below the best?
    ratio: float  # throughput of n / throughput of `against` (Hodges-Lehmann)
    ci: CI | None  # Moses' interval of that ratio, with its achieved level
    p: float  # one-sided exact Mann-Whitney
    p_adjusted: float  # Holm over the points past the CPU count; the fixed sequence needs none
    significant: bool
    # --until-decided (looks.py): 'gain' or 'no gain' of min_effect, '' undecided, by the
    # repeated interval ``ci`` at the look's level; p is then the raw one-sided p, for reference
    decision: str | None = None
    # the looks compared like with like within two speeds (stats.speeds): ratio and ci are the
    # speeds' common ratio, which the points' medians' ratio can lie far from
    within: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Step":
        return decode(cls, d)


@dataclass
class Choice:
    """The optimum of one scan, the point it was measured against, the tests, and why."""

    optimum_n: int | None
    best_n: int | None  # the highest median among the candidates
    steps: list[Step] = field(default_factory=list)
    reason: str = ""


def greater(a: Sequence[float], b: Sequence[float]) -> float:
    """One-sided p of "a tends to be larger than b", like with like: where the pooled rounds run
    at two speeds (stats.speeds), van Elteren's test within the speeds; else mw_greater."""
    if worth_looking(a) or worth_looking(b):
        w = within_speeds(b, a, with_p=False)
        if w.two and not w.undecided and w.strata:
            return w.greater_p()
    return mw_greater(a, b)


def _step(kind: str, n: int, against: int, xs: Mapping[int, Sequence[float]], p: float, q: float,
          alpha: float) -> Step:
    ratio, ci = ratio_ci(xs[n], xs[against], RATIO_LEVEL)
    return Step(n, against, kind, ratio, ci, p, q, q < alpha)


def _fmt_step(s: Step) -> str:
    if s.decision is not None and s.ci is not None:
        within = " within speeds" if s.within else ""
        return (f"N = {s.n} x{s.ratio:.3f}{within}, {level_text(s.ci.level)} repeated CI {s.ci.low:.3f}-"
                f"{s.ci.high:.3f}, {s.decision or 'cannot tell'}")
    ci = f", {s.ci.label()} {s.ci.low:.3f}-{s.ci.high:.3f}" if s.ci is not None else ""
    p = f"Holm p = {s.p_adjusted:.2g}" if s.kind == "past" else f"p = {s.p:.2g}"
    return f"N = {s.n} x{s.ratio:.3f}{ci}, {p}"


def choose(samples: Mapping[int, Sequence[float]], capacity: int | None, alpha: float = ALPHA,
           decided: Mapping[int, tuple[str, float, CI, bool]] | None = None) -> Choice:
    """The optimum of one scan from its per-round throughputs {N: [values]} (see the module doc).
    ``decided`` (--until-decided, looks.py): each point past the CPU count's decision, ratio and
    repeated interval against ref, in place of the Holm step."""
    xs = {n: list(v) for n, v in samples.items() if len(v) >= MIN_ROUNDS and all(x > 0 for x in v)}
    if not xs:
        most = max((len(v) for v in samples.values()), default=0)
        return Choice(None, None, [], f"not enough evidence: {most} round{'s' * (most != 1)} per point; "
                      f"a test of one N against another needs at least {MIN_ROUNDS} (use --reps 5)")
    med = {n: median(v) for n, v in xs.items()}

    def top(ns: Sequence[int]) -> int:
        return max(sorted(ns), key=lambda n: med[n])  # ties: the smaller N (max keeps the first)

    inside = sorted(n for n in xs if capacity is None or n <= capacity)
    past = sorted(n for n in xs if capacity is not None and n > capacity)
    steps: list[Step] = []
    past_said = ""
    pool = inside or past
    if inside and past:
        ref = top(inside)
        ps = [greater(xs[n], xs[ref]) for n in past]
        if decided is not None:
            past_steps = [Step(n, ref, "past", decided[n][1], decided[n][2], p, p, decided[n][0] == "gain",
                               decided[n][0], decided[n][3]) for n, p in zip(past, ps)]
            how = f"repeated CIs, Bonferroni over {len(decided)}, alpha spent over the looks"
        else:
            past_steps = [_step("past", n, ref, xs, p, q, alpha) for n, p, q in zip(past, ps, holm(ps))]
            how = f"one-sided Mann-Whitney, Holm over {len(past)}"
        steps += past_steps
        gainers = [s.n for s in past_steps if s.significant]
        tested = "; ".join(_fmt_step(s) for s in past_steps if s.significant or not gainers)
        if gainers:
            pool = gainers
            past_said = (f"past the {capacity} CPUs, yet significantly better than N = {ref}, the best at "
                         f"or below them ({tested}; {how}): the copies gain from running together "
                         "(waits on I/O, locks or memory, or CPUs not counted)")
        elif decided is not None and any(not s.decision for s in past_steps):
            past_said = f"cannot tell whether an N past the {capacity} CPUs gains over N = {ref} ({tested}; {how})"
        elif decided is not None:
            past_said = (f"no N past the {capacity} CPUs gains over N = {ref} by the minimum effect or more "
                         f"({tested}; {how})")
        else:
            past_said = f"no N past the {capacity} CPUs is significantly better than N = {ref} ({tested}; {how})"
    elif not inside:
        past_said = f"every N measured is past the {capacity} CPUs: none at or below them to compare with"
    best = top(pool)
    optimum = best
    below_said = ""
    for n in (c for c in pool if c < best):
        p = greater(xs[best], xs[n])
        s = _step("below", n, best, xs, p, p, alpha)
        steps.append(s)
        if not s.significant:
            optimum = n
            below_said = (f"the smallest N not significantly below N = {best}, the highest median "
                          f"({_fmt_step(s)}; one-sided Mann-Whitney, fixed sequence up from N = {pool[0]})")
            break
    else:
        if best > pool[0]:
            below_said = (f"the highest median; every smaller N is significantly below it (one-sided "
                          f"Mann-Whitney at alpha {alpha:g}, fixed sequence)")
    said = [x for x in (below_said, past_said) if x]
    left = sorted(set(samples) - set(xs))
    if left:
        said.append(f"N = {', '.join(map(str, left))} left out: fewer than {MIN_ROUNDS} good rounds")
    return Choice(optimum, best, steps, "; ".join(said))

