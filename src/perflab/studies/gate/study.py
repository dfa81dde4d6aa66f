"""The regression gate: a campaign against a named baseline, failing only on a real change.

A measure fails its threshold (``--fail-if 'median>+3%'``) when a test finds the change both
beyond the threshold and significant (Holm over the gated tests only, at alpha):
  * runs against runs: the change of the median, an exact Mann-Whitney p and Moses' interval
    of B/A at its real level (stats.shift) on the threshold's side of 1; on a side with two
    speeds, like with like (stats/judge.py);
  * with three or more saves of the baseline (its history): the campaign median against the
    baseline's level over its saves, with their drift as the variance (Kalibera & Jones), in
    place of runs against runs;
  * the cumulative change against the oldest of the last saves, so small steps that each pass
    cannot add up unseen (the CI recipe saves every passing default-branch campaign).
It cannot pass (UNSURE, exit 3) a measure whose runs could not have shown a change at the
threshold: the smallest change detectable at 80 % power, from the observed spread, is larger;
or whose two-speed sides cannot be compared like with like. Noise alone never fails a pipeline
and a significant change too small to matter does not either.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from perflab import stats
from perflab.errors import PerflabError
from perflab.platform.tune import state as tune_state
from perflab.stats.describe import median
from perflab.stats.shift import ratio_ci
from perflab.stats import judge
from perflab.studies.compare.study import CompareResult, check_same_kind, compare_measurements
from perflab.studies.compare.keys import primary_metric, series
from perflab.studies.gate import looks
from perflab.studies.gate.result import Check, GateLine, GateResult
from perflab.studies.gate.threshold import DEFAULT_FAIL_IF, Threshold, parse_threshold

__all__ = ["DEFAULT_ALPHA", "DEFAULT_FAIL_IF", "Check", "GateConfig", "GateLine", "GateResult", "Threshold", "evaluate", "parse_threshold",
           "NAME", "Config", "read"]


NAME = "gate"  # a reading study (studies.base.ReadingStudy): its entry is read, below
DEFAULT_ALPHA = 0.05


@dataclass(frozen=True)
class GateConfig:
    """What the gate compares and how strictly (typed at the CLI edge)."""

    baseline: str
    campaign: int
    thresholds: tuple[Threshold, ...]
    alpha: float = DEFAULT_ALPHA
    cross_machine: bool = False
    seed: int = 0
    history: int = 10  # the baseline's last saves read for drift and the cumulative change


def baseline_measures(store: Any, name: str) -> tuple[Any, set[str], str | None]:
    """(baseline campaign, the measures it has, its primary metric)."""
    b = store.baseline(name)
    camp = store.campaign(b.campaign_id)
    samples, _ = series(camp.study, store.measurements(camp.id))
    have = {m for per_key in samples.values() for m in per_key}
    return camp, have, primary_metric(camp.config)[0]


def check_measures(thresholds: Sequence[Threshold], have: set[str], primary: str | None) -> None:
    """Refuse a threshold on a measure the baseline does not have (one line, before any run)."""
    for t in thresholds:
        measure = t.measure(primary)
        if measure not in have:
            offer = ["median (wall time)", "user (CPU time)", "rss (max RSS)"]
            offer += ["energy"] if "energy_j" in have else []
            offer += ["energy_per_event"] if "energy_per_event_j" in have else []
            offer += sorted(m.removeprefix("metric:") for m in have if m.startswith("metric:"))
            why = ("the baseline has no primary metric" if t.name == "primary"
                   else f"the baseline has no measure '{t.name}'")
            raise PerflabError(f"--fail-if {t.text!r}: {why}; the gate compares medians of: "
                               f"{', '.join(offer)}")


def _machines(store: Any, host_a: int | None, host_b: int | None) -> tuple[str, str, bool | None]:
    """(baseline host, campaign host, same machine?) by the recorded host fingerprints.

    None when a side's machine was not recorded: then nobody can tell.
    """
    def name(h: int | None) -> str:
        if h is None:
            return "an unrecorded machine"
        rec = store.host(h)
        return f"{rec['hostname']} (host {h})"
    same = None if host_a is None or host_b is None else host_a == host_b
    return name(host_a), name(host_b), same


def _relative(t: Threshold, median_a: float) -> float:
    """The threshold as a share of A's median (an absolute one divided by it)."""
    return t.value if t.relative else t.value / median_a


def _by_title(study: str, meas: Sequence[Any]) -> dict[str, dict[str, list[float]]]:
    samples, titles = series(study, meas)
    return {titles[k]: v for k, v in samples.items()}


def _pick(per_title: dict, title: str, study: str) -> dict:
    """The measures of a point by its title; `run` campaigns of one command match whatever its name."""
    if title in per_title:
        return per_title[title]
    return next(iter(per_title.values())) if study == "run" and len(per_title) == 1 else {}


def _pct(x: float) -> str:
    return f"{100 * abs(x):.3g} %"


def _judge_line(line: GateLine, a: list[float], b: list[float], hist: list[list[float]],
                hist_ids: list[int], config: GateConfig) -> bool:
    """Fill ``line.checks`` (runs, drift, cumulative) and its notes; True when history was used."""
    ts, alpha = line.thresholds, config.alpha
    rel = min(abs(_relative(t, line.row.median_a)) for t in ts)
    op = ts[0].op
    pairs, ma, mb, why = judge.align(a, b, line.row.direction)
    for side, m in (("A", ma), ("B", mb)):
        if m is not None and m.multimodal:
            line.notes.append(f"two speeds in {side}: {m.line()}")
    thin = [p for p in pairs if min(len(p.a), len(p.b)) < 2]
    if thin and len(thin) == len(pairs):
        why = why or f"the {thin[0].label} has fewer than 2 runs on a side: no test is possible"
    elif thin:
        # A speed one side reached once is left out: the other speed, tested, can see the change
        # (a change of the code moves both speeds; _decide keeps the better-sampled one).
        line.notes.append(", ".join(p.label for p in thin) + " left out: fewer than 2 runs on a side")
    for pair in pairs:
        if min(len(pair.a), len(pair.b)) < 2:
            continue
        if judge.counted(pair.a, pair.b):
            p, lo, hi, level, _ = judge.counted_test(pair.a, pair.b, alpha)
            line.notes.append(f"counted, not timed: every run within {judge.COUNTED_SPREAD:.0e} of its "
                              "side's median; Welch's t on log values (exact where both sides are constant)")
        else:
            _, p = stats.mann_whitney(pair.b, pair.a)
            _, ci = ratio_ci(pair.b, pair.a, 1 - alpha)
            lo, hi, level = ci.low, ci.high, ci.level
        line.checks.append(Check("runs", pair.label, median(pair.a), median(pair.b), lo, hi,
                                 level, p, n_a=len(pair.a), n_b=len(pair.b)))
        line.samples[pair.label] = (pair.a, pair.b)
    if any(p.label for p in pairs):
        line.notes.append("compared like with like: " + ", ".join(
            f"{p.label} {median(p.a):.4g} -> {median(p.b):.4g} ({len(p.a)} and {len(p.b)} runs)"
            for p in pairs if p.a and p.b))
    line.inconclusive = why
    two = any(m is not None and m.multimodal for m in (ma, mb))
    dr = None if two else judge.drift(hist, rel)
    if dr is None:
        line.no_drift = "runs at two speeds in a campaign" if two else judge.drift_shortfall(hist, rel)
    nan = float("nan")
    extra = 0.0
    if dr is not None:
        extra = max(0.0, judge.median_var(b) - sum(map(judge.median_var, hist)) / len(hist))
        _, p = dr.test(math.log(median(b)), extra, op)
        for c in line.checks:
            c.decides = False  # the campaign, not the run, is the unit once drift is measured
        line.checks.append(Check("drift", f"the level of {dr.saves} saves", math.exp(dr.level),
                                 median(b), nan, nan, nan, p, n_a=dr.saves, n_b=1))
    if len(hist) >= 2:
        old, old_id = hist[0], hist_ids[0]
        label = f"the oldest of {len(hist)} saves (campaign {old_id})"
        if dr is not None:
            _, p = dr.test(math.log(median(b)), extra, op, paired_level=math.log(median(old)))
            line.checks.append(Check("cumulative", label, median(old), median(b), nan, nan, nan, p,
                                     n_a=len(old), n_b=len(b)))
        else:
            _, p = stats.mann_whitney(b, old)
            _, ci = ratio_ci(b, old, 1 - alpha)
            line.checks.append(Check("cumulative", label, median(old), median(b), ci.low, ci.high,
                                     ci.level, p, n_a=len(old), n_b=len(b)))
    line.drift, line.extra_var, line.rel = dr, extra, rel
    return dr is not None


def _decide(line: GateLine, m: int, alpha: float) -> None:
    """The verdict of a judged line: FAIL, UNSURE (could not have seen it) or pass."""
    hits: list[tuple[Check, Threshold]] = []
    for t in line.thresholds:
        for c in (c for c in line.checks if c.decides):
            side = (c.lo > 1.0 if t.op == ">" else c.hi < 1.0) if not math.isnan(c.lo) else \
                ((c.ratio > 1.0) == (t.op == ">"))
            c.beyond = c.beyond or t.beyond_medians(c.median_a, c.median_b)
            c.significant = c.significant or (c.p_adjusted < alpha and side)
            if t.beyond_medians(c.median_a, c.median_b) and c.p_adjusted < alpha and side:
                hits.append((c, t))
    line.failed = bool(hits)
    runs = [c for c in line.checks if c.kind == "runs"]
    if not line.failed and runs:
        per = []
        for c in runs:
            pa, pb = line.samples[c.label]
            if judge.counted(pa, pb):
                per.append((judge.counted_test(pa, pb, alpha / m)[4], min(len(pa), len(pb))))
                continue
            need = judge.runs_needed(pa, pb, line.rel, alpha / m)
            share = min(len(pa) / line.n_a, len(pb) / line.n_b)
            per.append((judge.min_detectable(pa, pb, alpha / m), math.ceil(need / share)))
        # One like-with-like comparison that can see the threshold is enough: a change of the
        # code moves both speeds, and the better-sampled one shows it.
        line.detectable, line.runs_needed = min(per)
        if line.detectable > line.rel and not line.inconclusive:
            line.inconclusive = (f"too few runs to see a {_pct(line.rel)} change: need about "
                                 f"{line.runs_needed} runs a side")
    parts = []
    for c, t in hits:
        against = {"runs": f"the baseline's {c.label}" if c.label else "the baseline",
                   "drift": c.label, "cumulative": c.label}[c.kind]
        parts.append(f"{100 * (c.ratio - 1):+.1f} % against {against}: beyond {t.text} and "
                     "significant: FAILS" + (" (cumulative change)" if c.kind == "cumulative" else ""))
    main = next((c for c in line.checks if c.decides and c.kind != "cumulative"), None)
    for t in line.thresholds if not line.failed else ():
        if main is None:
            parts.append(f"no test of {t.text}")
        elif t.beyond_medians(main.median_a, main.median_b):
            parts.append(f"beyond {t.text} but not significant" +
                         ("" if line.inconclusive else ": passes (noise cannot be ruled out)"))
        elif not main.significant:
            parts.append(f"within {t.text}")
        elif (main.ratio > 1) == (t.op == ">"):
            parts.append(f"within {t.text} (significant, but smaller than the threshold)")
        else:
            parts.append(f"within {t.text} (changed significantly the other way)")
    if line.inconclusive and not line.failed:
        parts.append(f"cannot pass: {line.inconclusive}")
    line.verdict = "; ".join(parts)
    hit_checks = [c for c, _ in hits]
    for c in line.checks:
        if c.kind != "runs" and c.decides and c not in hit_checks:
            ci = (f" [{100 * (c.lo - 1):+.1f}, {100 * (c.hi - 1):+.1f}] {100 * c.level:.0f}% CI"
                  if not math.isnan(c.lo) else "")
            line.notes.append(f"against {c.label}: {100 * (c.ratio - 1):+.1f} %{ci}, "
                              f"p={c.p_adjusted:.2g}" + ("" if ci else " (one-sided)"))
    if line.drift is not None:
        seen = line.drift.detectable(alpha / m, line.extra_var)
        line.notes.append(f"drift between the baseline's {line.drift.saves} saves: "
                          f"{100 * line.drift.sd:.2g} % SD of a campaign median" +
                          (f"; it hides changes below {_pct(seen)} (more saves narrow the level, "
                           "more runs do not)" if seen > line.rel else ""))


def evaluate(config: GateConfig, store: Any) -> GateResult:
    """Compare config.campaign with the baseline and apply the thresholds (module docstring)."""
    base = store.baseline(config.baseline)
    ca, cb = store.campaign(base.campaign_id), store.campaign(config.campaign)
    check_same_kind(ca, cb, f"baseline '{config.baseline}' (campaign {ca.id})")
    if cb.status == "running":
        raise PerflabError(f"campaign {cb.id} is still running: gate a finished campaign")
    meas_a, meas_b = store.measurements(ca.id), store.measurements(cb.id)
    primary = primary_metric(cb.config)[0] or primary_metric(ca.config)[0]
    samples_a, _ = series(ca.study, meas_a)
    check_measures(config.thresholds, {m for v in samples_a.values() for m in v}, primary)
    samples_b, _ = series(cb.study, meas_b)
    have_b = {m for v in samples_b.values() for m in v}
    for t in config.thresholds:
        if t.measure(primary) not in have_b:
            # A gated measure that vanished is no pass: the workload's output or the run broke.
            raise PerflabError(f"--fail-if {t.text!r}: campaign {cb.id} has no successful run with "
                               f"'{t.name}' although the baseline has; check its failed runs "
                               "('perflab results') or the workload's metric patterns")
    warnings: list[str] = []
    host_id = base.host_id if base.host_id is not None else ca.host_id
    host_a, host_b, same = _machines(store, host_id, cb.host_id)
    if same is None:
        warnings.append(f"baseline '{config.baseline}' was measured on {host_a}, campaign {cb.id} "
                        f"on {host_b}: cannot check they are the same machine")
    elif not same:
        what = (f"baseline '{config.baseline}' was measured on {host_a}, campaign {cb.id} on {host_b}")
        if not config.cross_machine:
            raise PerflabError(f"{what}: a difference may be the machine's, not the code's; measure "
                               "the baseline on this machine, or pass --cross-machine to gate anyway")
        warnings.append(f"{what}: the gate compares machines as well as code (--cross-machine)")
    differs = tune_state.difference((ca.labels or {}).get("machine_state"), (cb.labels or {}).get("machine_state"))
    if differs:
        warnings.append(differs)
    measures = ["wall_s"] + ([f"metric:{primary}"] if primary else []) + ["maxrss_kb", "energy_j"]
    measures += [t.measure(primary) for t in config.thresholds if t.measure(primary) not in measures]
    rows, only_a, only_b, notes = compare_measurements(
        ca.study, meas_a, meas_b, alpha=config.alpha, seed=config.seed, config=cb.config,
        measures=measures, interval="rank")  # info lines print Moses' interval at its real level
    if not rows:
        raise PerflabError(
            f"campaign {cb.id} shares no measured point with baseline '{config.baseline}' "
            f"(baseline: {', '.join(only_a[:3]) or 'nothing'}; campaign: {', '.join(only_b[:3]) or 'nothing'}): "
            "run the same commands (or name them alike with --command-name)")
    cmp = CompareResult(ca.id, cb.id, ca.study, cb.study, config.alpha, rows, only_a, only_b, notes)
    # compare's note on its bootstrap intervals at small n does not apply: the gate's own are exact.
    result = GateResult(config.baseline, cmp, hosts=(host_a, host_b),
                        warnings=warnings + [n for n in notes if "bootstrap" not in n])
    # measured until decided against this baseline: the looks' decisions are the run-level verdicts
    seq = looks.recorded(ca.id, getattr(cb, "summary", None))
    result.sequential = seq
    # The baseline's history: its last saves on the same machine, oldest first, ending with it.
    saves = [h.campaign_id for h in store.baseline_history(config.baseline, config.history)
             if h.host_id == base.host_id and h.campaign_id != ca.id] + [ca.id]
    by_a, by_b = _by_title(ca.study, meas_a), _by_title(cb.study, meas_b)
    hist_by = [_by_title(ca.study, store.measurements(cid)) for cid in saves[:-1]] + [by_a]
    used_history = False
    for row in rows:
        ts = [t for t in config.thresholds if t.measure(primary) == row.measure]
        line = GateLine(row, ts)
        result.lines.append(line)
        if not ts:
            line.verdict = "not gated: shown for information, outside the Holm family"
            continue
        if row.overall:
            line.checks.append(Check("runs", "", row.median_a, row.median_b, row.lo, row.hi, row.level,
                                     row.p_value, n_a=row.n_a, n_b=row.n_b))
            line.rel = min(abs(_relative(t, row.median_a)) for t in ts)
            _overall_strata(line, [(_pick(by_a, r.key, ca.study)[row.measure], _pick(by_b, r.key, cb.study)[row.measure])
                                   for r in rows if not r.overall and r.measure == row.measure])
            if seq is not None and not all(c.get("campaign") for c in seq.get("comparisons", ())):
                line.checks[0].decides = False
                line.verdict = "left to the per-point lines (the looks decided each point)"
            continue
        a = _pick(by_a, row.key, ca.study)[row.measure]
        b = _pick(by_b, row.key, cb.study)[row.measure]
        hist, ids = [], []
        for cid, h in zip(saves, hist_by):
            vals = _pick(h, row.key, ca.study).get(row.measure)
            if vals and len(vals) >= 2 and min(vals) > 0:
                hist.append(vals)
                ids.append(cid)
        line.n_a, line.n_b = len(a), len(b)
        used_history |= _judge_line(line, a, b, hist, ids, config)
        recs = [c for c in (seq or {}).get("comparisons", ()) if c["measure"] == row.measure and not c.get("campaign")
                and c["point"] in (row.key, *((c["point"],) if len(by_b) == 1 else ()))]
        # the looks' decisions stand for the thresholds they decided; another threshold (a later
        # `compare --baseline`) is judged by the fixed rules
        recs = [c for c in recs if c["threshold"] in {t.text for t in ts}]
        if recs and {c["threshold"] for c in recs} == {t.text for t in ts}:
            looks.repeated_runs_check(line, recs, a, b)
            line.samples["looks"] = recs
    if not any("looks" in ln.samples for ln in result.lines):
        result.sequential = seq = None  # no line left to the looks: the fixed rules judge them all
    family = [c for ln in result.lines if ln.thresholds for c in ln.checks if c.decides]
    result.family = len(family)
    for c, p in zip(family, stats.holm([c.p_value for c in family])):
        c.p_adjusted = p
    for ln in result.lines:
        if ln.thresholds:
            if "looks" in ln.samples:  # the campaign-level checks take the half of alpha the looks left
                looks.decide(ln, ln.samples["looks"], seq or {}, config.alpha / 2)
            elif not ln.row.overall:
                _decide(ln, max(result.family, 1), config.alpha)
            elif ln.verdict:
                pass  # an all-points row the looks left to the per-point lines
            else:
                _decide_overall(ln, config.alpha, max(result.family, 1))
            main = next((c for c in ln.checks if c.decides), None)
            if main is not None:
                ln.row.p_adjusted, ln.row.significant = main.p_adjusted, main.significant
    gated = [ln for ln in result.lines if ln.thresholds and not ln.row.overall]
    if gated and not used_history:
        n, shift = len(saves), ("a level shift between campaigns (a few per cent from one day to the "
                                "next) cannot be told from a change")
        if n < judge.MIN_SAVES:
            result.warnings.append(
                f"one campaign a side: baseline '{config.baseline}' has {n} save{'s' * (n != 1)} on this "
                f"machine ({judge.MIN_SAVES} needed), so {shift}; save the baseline on several days and "
                "the gate measures that drift")
        else:  # enough saves, yet no drift measured: say why, not that more saves are needed
            why = "; ".join(dict.fromkeys(ln.no_drift for ln in gated if ln.no_drift))
            result.warnings.append(
                f"one campaign a side: baseline '{config.baseline}' has {n} saves on this machine, but "
                f"their drift was not measured ({why}), so {shift}")
    for t in config.thresholds:
        if not any(t in ln.thresholds for ln in result.lines):
            result.warnings.append(f"--fail-if {t.text!r}: no comparison of {t.name} (constant "
                                   "or too few runs on a side): nothing to gate")
    if only_a or only_b:
        result.warnings.append(f"unmatched points: {len(only_a)} only in the baseline, "
                               f"{len(only_b)} only in campaign {cb.id}; they are not gated")
    return result


def _overall_strata(line: GateLine, strata: list) -> None:
    """Keep an 'all points' row's points; with two speeds at a point it leaves the verdict to the
    per-point lines, which compare like with like (a rank test over mixed speeds cannot)."""
    line.samples["strata"] = strata
    two = sum(any(m is not None and m.multimodal for m in (judge.modes(a), judge.modes(b))) for a, b in strata)
    if two:
        line.checks[0].decides = False
        line.notes.append(f"two speeds at {two} of {len(strata)} points: an all-points test cannot "
                          "compare like with like, so the per-point lines decide")


def _decide_overall(line: GateLine, alpha: float, m: int = 1) -> None:
    """An 'all points' row: beyond and significant (its CI on the threshold's side); UNSURE where
    the points together could not have seen the threshold (judge.stratified_min_detectable)."""
    c = line.checks[0]
    if not c.decides:
        line.verdict = "left to the per-point lines (two speeds)"
        return
    _decide_parts = []
    for t in line.thresholds:
        side = c.lo > 1.0 if t.op == ">" else c.hi < 1.0
        c.significant = c.p_adjusted < alpha and side
        if t.beyond_medians(c.median_a, c.median_b) and c.significant:
            line.failed = True
            _decide_parts.append(f"beyond {t.text} and significant: FAILS")
        else:
            _decide_parts.append(f"within {t.text}" if not t.beyond_medians(c.median_a, c.median_b)
                                 else f"beyond {t.text} but not significant: passes")
    strata = line.samples.get("strata") or []
    if not line.failed and strata and not all(judge.counted(a, b) for a, b in strata):
        line.detectable = judge.stratified_min_detectable(strata, alpha / m)
        if line.detectable > line.rel:
            line.runs_needed = judge.stratified_runs_needed(strata, line.rel, alpha / m)
            line.inconclusive = (f"too few runs to see a {_pct(line.rel)} change across the points: "
                                 f"need about {line.runs_needed} runs a side at each")
            _decide_parts = [p_.replace(": passes", "") for p_ in _decide_parts]
            _decide_parts.append(f"cannot pass: {line.inconclusive}")
    line.verdict = "; ".join(_decide_parts)


# The reading study's shape (studies.base.ReadingStudy): NAME, Config, read(config, store) -> Result.
Config = GateConfig
read = evaluate
