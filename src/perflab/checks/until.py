"""The rows of a measured-until-decided harness (``--until-decided`` of run, variants and
instances), in one shape: false positives over all looks on null campaigns, detection of the
planted effect, the share of nulls whose interval ruled the effect out, the share of planted
campaigns the budget left undecided, and the median and 90th percentile of the runs (rounds)
taken, null and planted together."""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence


def rates(nulls: Sequence[Any], found: Sequence[Any], taken: Sequence[int], called: Callable[[Any], Any],
          found_it: Callable[[Any], Any], ruled_out: Callable[[Any], Any]) -> dict[str, float]:
    """The row's figures from the null and planted campaigns (each result's ``sequential``
    says whether it was decided) and the runs or rounds each took."""
    trials = len(nulls)
    rounds = sorted(taken)

    def share(results: Sequence[Any], test: Callable[[Any], Any]) -> float:
        return sum(bool(test(r)) for r in results) / trials

    return dict(false_positive=share(nulls, called), detection=share(found, found_it),
                ruled_out=share(nulls, ruled_out), undecided=share(found, lambda r: not r.sequential["decided"]),
                runs_median=rounds[len(rounds) // 2],
                runs_p90=rounds[min(len(rounds) - 1, math.ceil(0.9 * len(rounds)) - 1)])


def line(name: str, r: dict[str, float], runs: int) -> str:
    """`verdict-check: NAME false_positive=... runs_p90=...` as bench/verdicts.py prints it."""
    return (f"verdict-check: {name} false_positive={r['false_positive']:.3f} detection={r['detection']:.3f} "
            f"runs={runs} null_ruled_out={r['ruled_out']:.3f} undecided={r['undecided']:.3f} "
            f"runs_median={r['runs_median']} runs_p90={r['runs_p90']}")
