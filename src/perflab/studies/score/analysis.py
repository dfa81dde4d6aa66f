"""From a suite's workloads (references, repetitions, copies) to its ScoreResult: pure, shared by a
measured suite and an imported report."""

from __future__ import annotations

from typing import Any, Sequence

from perflab.studies.score import method
from perflab.studies.score.flags import CopyGroups, copy_groups, disagreeing
from perflab.studies.score.result import ScoreResult, WorkloadScore

TOLERANCE = 0.001  # an imported score recomputed within this is the file's own (it rounds to 4 decimals)


def analyse_workloads(result: ScoreResult, level: float = method.LEVEL) -> ScoreResult:
    """Fill every workload's ratio and interval, the score and its interval, the flags. In place;
    returns ``result``."""
    result.level = level
    result.interval_method = method.METHOD
    lms: list[Any] = []
    for w in result.workloads:
        if w.values:
            w.rep_ratios = [method.rep_ratio(v, w.references) for v in w.values]
        if w.rep_ratios:
            w.ratio, w.chosen = method.median_pick(w.rep_ratios)
            w.ratio = round(w.ratio, 4)
        lm = method.log_mean(raw_ratios(w))
        lms.append(lm)
        w.ratio_ci = list(lm.interval(level)) if lm is not None else None
    scored = [w for w in result.workloads if w.ratio is not None]
    if scored and len(scored) == len(result.workloads):
        weights = [w.weight for w in scored]
        result.score = method.hepscore([w.ratio for w in scored if w.ratio is not None], weights, result.scaling)
        if all(lm is not None for lm in lms):
            # The ignore: score_interval is None only without a log mean, and each has one here.
            _, lo, hi = method.score_interval([lm for lm in lms if lm is not None], weights, result.scaling, level)  # type: ignore[misc]  # see above
            result.score_ci = [lo, hi]
            result.cannot_tell = ""
        elif not result.cannot_tell:
            short = [w.name for w, lm in zip(result.workloads, lms) if lm is None]
            result.cannot_tell = (f"no interval: {', '.join(short)} ha{'s' if len(short) == 1 else 've'} one "
                                  "repetition; run 3 repetitions (--reps 3) for one")
    elif scored:
        missing = [w.name for w in result.workloads if w.ratio is None]
        result.cannot_tell = f"no score: {', '.join(missing)} gave no value"
    if result.score is not None and result.cores:
        result.score_per_core = round(result.score / result.cores, 4)
    if result.score is not None and result.watts:
        result.score_per_watt = result.score / result.watts
    chosen = {w.name: w.chosen for w in result.workloads}
    result.disagreeing, result.rep_noise = disagreeing(
        {w.name: raw_ratios(w) for w in result.workloads if len(w.rep_ratios) >= 3}, chosen)
    siblings = smt_note(result.host)
    per_copy = {w.name: _per_copy(w.copy_values) for w in result.workloads}
    sizes = {len(v) for v in per_copy.values()}
    if len(sizes) == 1 and all(per_copy.values()) and len(per_copy) > 1:
        # Copy i of every workload ran on the same CPUs: one test over the copies, each copy's rate
        # relative to its workload's median copy, combined over the workloads (a copy slow in every
        # workload is a slow place), instead of one test per workload and its false alarms.
        groups = copy_groups(f"copies across the {len(per_copy)} workloads", _relative(list(per_copy.values())),
                             siblings if not result.host.get("copy_cores") else "")
        result.copy_groups.append(with_cores(groups, result.host.get("copy_cores")))
    else:
        for name, values in per_copy.items():
            if values:
                result.copy_groups.append(copy_groups(name, values, siblings))
    return result


def with_cores(groups: CopyGroups, copy_cores: list[list[int]] | None) -> CopyGroups:
    """The groups' sentence with where the copies ran: whether the slow ones are those sharing a core
    with another copy (SMT siblings) and the fast ones those alone on theirs."""
    if not copy_cores or not (groups.groups or groups.slow):
        return groups
    seen: dict[int, int] = {}
    for cores in copy_cores:
        for c in cores:
            seen[c] = seen.get(c, 0) + 1
    shared = {i for i, cores in enumerate(copy_cores) if any(seen[c] > 1 for c in cores)}
    slow = set(groups.groups[1]["copies"]) if groups.groups else set(groups.slow)
    if not shared:
        where = "no two copies shared a core: not SMT siblings"
    elif slow == shared:
        where = "the slower copies are exactly those that shared a core with another copy (SMT siblings)"
    elif slow <= shared:
        where = "the slower copies all shared a core with another copy (SMT siblings), as did others"
    else:
        where = f"copies {sorted(slow - shared)} of the slower ones had a core of their own: not SMT alone"
    return CopyGroups(groups.name, groups.n, groups.groups, groups.slow, f"{groups.sentence}; {where}")


def _relative(per_workload: list[list[float]]) -> list[float]:
    """Per copy, the geometric mean over the workloads of its value over its workload's median copy."""
    import math
    import statistics

    meds = [statistics.median(v) for v in per_workload]
    n = len(per_workload[0])
    return [math.exp(sum(math.log(v[i] / m) for v, m in zip(per_workload, meds)) / len(meds)) for i in range(n)]


def raw_ratios(w: WorkloadScore) -> list[float]:
    """The repetitions' ratios unrounded where the values are known (the interval's input)."""
    if w.values:
        return [method.weighted_geomean([v[k] / ref for k, ref in w.references.items()]) for v in w.values]
    return list(w.rep_ratios)


def _per_copy(copy_values: Sequence[Sequence[float]]) -> list[float]:
    """Each copy's median over the repetitions (copy i of every repetition ran in the same place)."""
    reps = [r for r in copy_values if r]
    if not reps or len({len(r) for r in reps}) != 1:
        return []
    import statistics

    return [statistics.median(r[i] for r in reps) for i in range(len(reps[0]))]


def smt_note(host: dict[str, Any]) -> str:
    """Why copies may run at two speeds, from what the host record says of its SMT."""
    tpc = host.get("threads_per_core")
    if tpc and int(tpc) > 1:
        return (f"the host has SMT ({tpc} threads per core), where copies sharing a core with a busy sibling "
                "run slower; which CPU each copy ran on is not recorded, so whether these groups are "
                "the siblings cannot be told")
    return ""


def check_file(result: ScoreResult) -> ScoreResult:
    """An imported report's own score and score per core against the recomputed ones."""
    if result.file_score is not None and result.score is not None:
        if abs(result.file_score - result.score) > TOLERANCE:
            result.mismatch.append(f"the file's score {result.file_score:g} differs from {result.score:g} "
                                   "recomputed from its workloads, references and weights")
    if result.file_score_per_core is not None and result.file_score:
        implied = result.file_score / result.file_score_per_core
        if result.cores and abs(implied - result.cores) > 0.5:
            result.mismatch.append(f"the file's score_per_core {result.file_score_per_core:g} divides by "
                                   f"{implied:.0f} cores; its host has {result.cores} logical CPUs")
    return result
