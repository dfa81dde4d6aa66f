"""The gate's side of `perflab run --baseline NAME --until-decided` (studies/run/gated.py runs the
looks): the gated comparisons read from the baseline before the runs, and the verdict of each
gated line from the decisions the last look recorded in the campaign.

A line the looks decided reads FAIL (a regression shown by its repeated interval), pass (the
threshold ruled out: "no change beyond median>+3%") or UNSURE (the budget ended first: the runs
that would decide it, or that the baseline's runs are too few for any). The gate's campaign-level
checks against the baseline's history (its drift, the cumulative change against the oldest save)
cannot be narrowed by more runs of this campaign: they are made once, at the stop, with the half
of alpha the looks left them (Holm among them), and can still fail the line. Where the saves
measure the drift between campaigns, the gate takes the campaign as the unit: no look decides
that line (the looks stop at the first one where no other line is left to them), and the gate's
fixed rules judge it.
"""

from __future__ import annotations

from typing import Any, Sequence

from perflab.errors import PerflabError
from perflab.stats import judge
from perflab.stats.describe import median
from perflab.studies.compare.keys import design_key, primary_metric, series
from perflab.studies.gate.result import Check, GateLine
from perflab.studies.gate.threshold import Threshold
from perflab.studies.run.gated import FAILS, RULED_OUT, Against, Gated
from perflab.studies.run.result import level_text

# The measures a look can read from a run as it completes (studies.compare.keys.observation).
LOOKED = ("wall_s", "user_s", "maxrss_kb")


def against(store: Any, name: str, thresholds: Sequence[Threshold], commands: Sequence[tuple[str, dict]],
            primary: str | None, alpha: float, history: int = 10) -> Gated:
    """The gated comparisons of the commands (label, params) against baseline ``name``, before any
    run; a command or measure the baseline lacks, or one it has fewer than 2 runs of, is refused."""
    base = store.baseline(name)
    camp = store.campaign(base.campaign_id)
    samples, titles = series(camp.study, store.measurements(camp.id))
    by_title = {titles[k]: v for k, v in samples.items()}
    primary = primary or primary_metric(camp.config)[0]
    base_host = base.host_id if base.host_id is not None else camp.host_id
    saves = [h.campaign_id for h in store.baseline_history(name, history)
             if h.host_id == base_host and h.campaign_id != camp.id]
    older = []
    for cid in saves:
        smp, txt = series(camp.study, store.measurements(cid))
        older.append({txt[k]: v for k, v in smp.items()})
    out = []
    for label, params in commands:
        point = design_key("run", label, params).text
        have = by_title.get(point)
        if have is None and len(by_title) == 1 and len(commands) == 1:
            have = next(iter(by_title.values()))  # one command a side matches whatever its name, as the gate does
        if have is None:
            raise PerflabError(f"--until-decided: baseline '{name}' (campaign {camp.id}) has no runs of '{point}': "
                               "run the baseline's commands (or name them alike with --command-name)")
        for t in thresholds:
            measure = t.measure(primary)
            if measure not in LOOKED and not measure.startswith("metric:"):
                raise PerflabError(f"--fail-if {t.text!r}: --until-decided gates wall time, CPU time, max RSS "
                                   "and metrics, not energy: drop --until-decided or this threshold")
            vals = have.get(measure) or []
            if len(vals) < 2 or min(vals) <= 0:
                raise PerflabError(f"--fail-if {t.text!r}: baseline '{name}' has {len(vals)} positive run"
                                   f"{'s' * (len(vals) != 1)} of '{point}' with {t.name}: --until-decided needs "
                                   "2 or more; save a baseline with more runs")
            limit = t.value if t.relative else t.value / median(vals)
            hist = [v for v in ((o.get(point) or {}).get(measure) for o in older) if v and len(v) >= 2 and min(v) > 0]
            drifts = judge.drift([*hist, vals], limit) is not None
            out.append(Against(label, point, measure, t.text, t.op, limit, tuple(vals), drifts))
    return Gated(name, camp.id, tuple(out), alpha, history=bool(saves))


def recorded(baseline_campaign: int, summary: dict | None) -> dict | None:
    """The looks' record of a campaign measured until decided against this baseline's campaign;
    None for a campaign measured without looks, or against another baseline (then the fixed
    rules apply)."""
    seq = (summary or {}).get("sequential")
    if seq and seq.get("gate") and seq.get("baseline_campaign") == baseline_campaign:
        return seq
    return None


def repeated_runs_check(line: GateLine, recs: list[dict], a: Sequence[float], b: Sequence[float]) -> None:
    """The line's run-level checks become the one the looks decided: its repeated interval, out of
    the Holm family (the looks spent their own share of alpha)."""
    r = recs[0]
    nan = float("nan")
    lo, hi, level = (r["low"], r["high"], r["level"]) if r["level"] else (nan, nan, nan)
    # Within two speeds the interval is about the speeds' common ratio, which the pooled medians'
    # ratio can lie far from (one side at one speed, the other at both): that estimate is printed.
    two = bool(r.get("speeds")) and r["level"]
    line.checks = [Check("runs", "pooled" if two else "", median(a), median(b), lo, hi, level, nan, n_a=len(a),
                         n_b=len(b), decides=False, estimate=r["ratio"] if two else nan)
                   ] + [c for c in line.checks if c.kind != "runs"]
    line.repeated = True


def decide(line: GateLine, recs: list[dict], seq: dict, alpha_campaign: float) -> None:
    """The verdict of a line the looks decided (module docstring)."""
    line.inconclusive = ""  # the looks compared within the speeds themselves (stats.speeds)
    hits = []
    for t in line.thresholds:
        for c in (c for c in line.checks if c.decides):  # the campaign-level checks
            side = (c.lo > 1.0 if t.op == ">" else c.hi < 1.0) if c.lo == c.lo else ((c.ratio > 1.0) == (t.op == ">"))
            c.beyond = c.beyond or t.beyond_medians(c.median_a, c.median_b)
            c.significant = c.significant or (c.p_adjusted < alpha_campaign and side)
            if t.beyond_medians(c.median_a, c.median_b) and c.p_adjusted < alpha_campaign and side:
                hits.append((c, t))
    parts = []
    for r in recs:
        ci = (f"its {level_text(r['level'])} repeated CI [{r['low']:.4f}, {r['high']:.4f}]"
              if r["level"] else "no interval")
        if r["decision"] == FAILS:
            parts.append(f"{100 * (r['ratio'] - 1):+.1f} % against the baseline: beyond {r['threshold']}, "
                         f"{ci} on that side of 1: FAILS")
        elif r["decision"] == RULED_OUT:
            parts.append(f"no change beyond {r['threshold']}: {ci} lies within it")
        else:
            parts.append(f"cannot tell whether beyond {r['threshold']}: {ci} holds both answers")
    for c, t in hits:
        parts.append(f"{100 * (c.ratio - 1):+.1f} % against {c.label}: beyond {t.text} and significant: FAILS"
                     + (" (cumulative change)" if c.kind == "cumulative" else ""))
    line.failed = bool(hits) or any(r["decision"] == FAILS for r in recs)
    open_ = [r for r in recs if not r["decision"]]
    if open_ and not line.failed:
        needs = [r.get("needs_runs") for r in open_]
        n = (seq.get("looks") or [{}])[-1].get("runs")
        if not seq.get("final"):
            line.inconclusive = f"not decided when the runs stopped ({n} runs)"
        elif None in needs:
            line.inconclusive = (f"cannot tell within the budget ({n} runs), and no number of new runs would: "
                                 f"the baseline's {open_[0]['n_a']} runs leave the interval too wide; save a "
                                 "baseline with more runs")
        else:
            line.runs_needed = max(int(x) for x in needs if x is not None)
            line.inconclusive = (f"cannot tell within the budget ({n} runs): about {line.runs_needed} runs "
                                 f"would decide it (--until-decided --max-runs {line.runs_needed})")
        parts.append(f"cannot pass: {line.inconclusive}")
    line.verdict = "; ".join(parts)
    for c in line.checks:
        if c.kind != "runs" and c.decides and c not in [h for h, _ in hits]:
            ci = (f" [{100 * (c.lo - 1):+.1f}, {100 * (c.hi - 1):+.1f}] {100 * c.level:.0f}% CI" if c.lo == c.lo else "")
            line.notes.append(f"against {c.label}: {100 * (c.ratio - 1):+.1f} %{ci}, p={c.p_adjusted:.2g}"
                              + ("" if ci else " (one-sided)") + ", tested once at the stop")
