"""Two speeds in a per-core scan: runs classified by speed mode, CPUs compared within a mode.

A 16-vCPU KVM guest runs each vCPU at one of two speeds (124 and 193 events/s) for a second or
more at a time. Mixed into the ratios, a vCPU that happened to stay at the slower speed looked
4-6 % slower than the rest in every round (the median of the others is pulled up by those at the
faster one), and the noise of the mix made the detectable slowdown 70-130 %. So: stats.modes
classifies every run's cost; where the speeds alternate within CPUs, each run's cost is divided
by its mode's centre over the fastest mode's (the mode as a nuisance factor; each run is labelled
by the nearest mode once its CPU's own level is taken out, ``_relabel``), and the per-round
ratios are taken on those. A CPU's share of runs in the faster mode is reported as what it is, a
state of the host over the scan ("CPUs 5,13 ran at the faster speed ... for nearly the whole scan"),
never as a verdict on the others. A CPU slower than the rest by about the gap between the speeds
cannot be told from the slower speed; it then shows as a CPU that never ran fast.
"""

from __future__ import annotations

from typing import Any

from perflab.platform.sysfs import format_cpulist
from perflab.stats.modes import detect_modes

ALWAYS = 0.9  # "for the whole scan": at least this share of a CPU's runs in one mode


def normalise(cost, rows: list[Any]) -> tuple[Any, dict[str, Any] | None]:
    """(cost with each run divided by its mode's factor, stats.modes as a dict or None); fills
    rows[i].mode_shares when the speeds alternate within at least 2 CPUs."""
    import numpy as np

    cells = np.argwhere(~np.isnan(cost))
    if cells.shape[0] < 10:
        return cost, None
    # Plain two speeds only: two speeds with a tail (stats.modes' rule for a loaded machine's
    # smeared humps) took a CPU slow in 2 of 3 rounds and another slow in two rounds for the
    # machine's slower speed, and divided both away (tests/studies/test_cores_verdicts.py).
    modes = detect_modes(cost[~np.isnan(cost)], tailed=False)
    info = modes.as_dict()
    if not modes.multimodal:
        return cost, info
    labels = _relabel(np.log(cost[cells[:, 0], cells[:, 1]]), cells[:, 0],
                      np.log([m.center for m in modes.modes]), np.asarray(modes.labels))
    shares = []
    for i in range(cost.shape[0]):
        mine = labels[cells[:, 0] == i]
        shares.append(tuple(float((mine == k).mean()) for k in range(len(modes.modes))) if mine.size else ())
    mixed = sum(sum(s > 0 for s in sh) > 1 for sh in shares)
    if mixed < 2:  # modes that only separate CPUs are the per-CPU verdict's
        info["multimodal"] = False
        return cost, info
    for row, sh in zip(rows, shares):
        row.mode_shares = sh
    centres = np.array([m.center for m in modes.modes])
    factor = centres / centres.min()
    out = cost.copy()
    out[cells[:, 0], cells[:, 1]] = cost[cells[:, 0], cells[:, 1]] / factor[labels]
    info["normalised"] = True
    return out, info


def _relabel(logc, cpu, centres, labels, rounds: int = 3):
    """Labels by the nearest mode after each CPU's own level is taken out (log cost = CPU level +
    mode + noise, fitted by alternating medians): a competitor 25 % slower than the rest put a
    CPU's faster-speed runs halfway between the two speeds, and read as the slower speed they
    came out 20 % *faster* than the rest in a block."""
    import numpy as np

    for _ in range(rounds):
        resid = logc - centres[labels]
        level = np.zeros(int(cpu.max()) + 1)
        for i in np.unique(cpu):
            level[i] = np.median(resid[cpu == i])
        new = np.argmin(np.abs(logc[:, None] - level[cpu][:, None] - centres[None, :]), axis=1)
        if (new == labels).all():
            break
        labels = new
    return labels


def finding(rows: list[Any], modes: dict[str, Any] | None, higher_is_better: bool) -> str:
    """'CPUs 5, 13 ran at the faster speed, CPU 0 at the slower one for nearly the whole scan ...'."""
    if not modes or not modes.get("normalised"):
        return ""
    fast = [r.cpu for r in rows if r.mode_shares and r.mode_shares[0] >= ALWAYS]
    slow = [r.cpu for r in rows if r.mode_shares and r.mode_shares[-1] >= ALWAYS]
    share = [r.mode_shares[0] for r in rows if r.mode_shares]
    parts = []
    if fast:
        parts.append(f"CPU{'s' if len(fast) > 1 else ''} {format_cpulist(fast)} ran at the faster speed")
    if slow and len(slow) < len(share):
        parts.append(f"CPU{'s' if len(slow) > 1 else ''} {format_cpulist(slow)} at the slower one")
    if not parts:
        return ""
    return (", ".join(parts) + f" for nearly the whole scan (at least {ALWAYS:.0%} of their runs; the faster "
            f"speed in {min(share):.0%}-{max(share):.0%} of a CPU's runs): the host's state over this scan, "
            "compared within each speed, not a verdict on the other CPUs")
