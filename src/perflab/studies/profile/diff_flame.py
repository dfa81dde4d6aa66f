"""The differential flame graph of `perflab profile diff`: B's call tree at B's widths, each frame
with its inclusive share in A, and the flat diff's test of its function.

A frame is coloured by the change of its inclusive share (B's share of B's samples minus A's
share of A's, both per call path) and marked only where the existing per-function test says the
function's share differs (Welch's t on each recording's share, Holm over the functions tested:
diff.share_tests); the graph adds no test of its own, so it marks exactly what the table does.
A function's test is of its self share, so every frame of that function is marked, on whatever
path it sits. Two callgrind campaigns are marked by their own test instead (counts.diff_counts:
B/A of each function's exclusive Ir, Welch's t on log counts, exact where constant, Holm). The tooltip's ratio is B/A of the function's mean self share with its interval:
the delta method on the log of the ratio of the two means, Welch-Satterthwaite degrees of
freedom, at the level asked, per function (not Holm-adjusted: the mark carries the correction).
Frames on one side only are named: B's in the graph (no A share), A's in a list beside it.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from perflab.studies.profile.parse import Profile
from perflab.studies.profile.stacks import flame, merge_stacks, tree

ONLY_LISTED = 12  # frames found on one side only, named beside the graph (largest first)


def ratio_interval(a: Sequence[float], b: Sequence[float], level: float) -> tuple[float, float, float] | None:
    """B/A of two means with its interval (delta method on the log ratio, Welch df); None
    where a side's mean is 0 or a side has fewer than 2 values."""
    if len(a) < 2 or len(b) < 2:
        return None
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    if ma <= 0 or mb <= 0:
        return None
    va = sum((x - ma) ** 2 for x in a) / (len(a) - 1) / len(a) / ma ** 2
    vb = sum((x - mb) ** 2 for x in b) / (len(b) - 1) / len(b) / mb ** 2
    r = mb / ma
    if va + vb == 0:
        return r, r, r  # every recording of each side the same share: the ratio is exact
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    from scipy.stats import t as student

    h = float(student.ppf(0.5 + level / 2, df)) * math.sqrt(va + vb)
    return r, r * math.exp(-h), r * math.exp(h)


def _self_shares(profiles: Sequence[Profile], sym: str) -> list[float]:
    return [(p.functions[sym].period if sym in p.functions else 0.0) / (p.period or 1.0) for p in profiles]


def marks_of(tests: Sequence[Any], pa: Sequence[Profile], pb: Sequence[Profile], level: float) -> dict[str, dict]:
    """symbol -> what its frames carry: marked (Holm p < alpha), the ratio, interval and words."""
    out = {}
    for t in tests:
        ri = ratio_interval(_self_shares(pa, t.symbol), _self_shares(pb, t.symbol), level)
        words = f"self share {100 * t.share_a:.2f} % -> {100 * t.share_b:.2f} %"
        if ri:
            words += f", B/A {ri[0]:.2f} [{ri[1]:.2f}, {ri[2]:.2f}] {level:.0%} CI"
        elif not t.share_a or not t.share_b:
            words += f", only in {'B' if t.share_b else 'A'}: no ratio"
        words += f"; Welch, Holm p {t.p_holm:.2g}: " + ("differs" if t.differs else "no difference shown")
        out[t.symbol] = {"marked": bool(t.differs), "p_holm": t.p_holm, "text": words,
                         **({"ratio": ri[0], "low": ri[1], "high": ri[2], "level": level} if ri else {})}
    return out


def count_marks(rows: Sequence[Any]) -> dict[str, dict]:
    """symbol -> what its frames carry, from callgrind's count test (counts.diff_counts): marked
    where changed (Holm p < alpha, interval beyond 1 +- min effect), B/A of exclusive counts."""
    return {r.symbol: {"marked": bool(r.changed), "p_holm": r.p_holm, "ratio": r.ratio, "low": r.low,
                       "high": r.high, "level": r.level,
                       "text": f"exclusive Ir: {r.test_text()}: " + ("changed" if r.changed else "no change shown")}
            for r in rows if r.status == "tested"}


def differential(a_stacks: Sequence[Mapping[str, int]], b_stacks: Sequence[Mapping[str, int]],
                 marks: Mapping[str, dict], level: float = 0.95,
                 min_share: float = 0.001) -> tuple[dict[str, Any], list[str]]:
    """B's flame (widths, intervals over B's recordings) with A's share per path and the marks;
    and the frames found on one side only, in words."""
    fb = flame(b_stacks, level, min_share)
    ta = tree(merge_stacks(a_stacks))
    a_shares = {p: n.total / ta.total for p, n in ta.walk()} if ta.total else {}
    b_paths = set()
    for path, node in fb.root.walk():
        b_paths.add(path)
        node.a_share = a_shares.get(path, 0.0)
        node.test = marks.get(node.name)
    only_b = sorted(((n.total / fb.root.total, p) for p, n in fb.root.walk() if n.a_share == 0.0),
                    key=lambda x: (-x[0], x[1]))
    only_a = sorted(((s, p) for p, s in a_shares.items() if s >= min_share and p not in b_paths),
                    key=lambda x: (-x[0], x[1]))
    # a path's first frame found on one side only stands for its subtree: name it, not its callees
    named = []
    for side, rows in (("B", only_b), ("A", only_a)):
        seen: list[tuple[str, ...]] = []
        for share, path in rows:
            if any(path[:len(s)] == s for s in seen):
                continue
            seen.append(path)
            if len(seen) <= ONLY_LISTED:
                caller = f"called from {path[-2]}" if len(path) > 2 else "a root frame"
                named.append(f"only in {side}: {path[-1]} ({100 * share:.1f} % of {side}'s samples, {caller})")
    return fb.as_dict(), named
