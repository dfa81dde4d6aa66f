"""Does the per-event series analysis find a planted warm-up, a heavy event and a job that slows,
and stay quiet on a job without them; does the steady rate's interval cover the true rate?

A simulated job processes the same input every run (as minihlt at one seed, or a trigger on one
file): ``EVENTS`` events whose costs are drawn once per trial from a Pareto tail (alpha 2.5: a
few events many times the median, a finite variance), so the same ids are heavy in every run.
Each run multiplies every cost by the machine: a per-run factor (log-normal 3 %, an exponential
tail of 3 % mean, and a drift of up to +-3 % from the first run to the last, a machine slowly
changing under the campaign) and a per-event jitter (log-normal 10 %). The true steady rate is
the events after the warm-up over their expected time, the run factor's and the jitter's means
included. Models:

- ``none``: no warm-up (a false alarm is a warm-up cut in any run of the campaign);
- ``step``: the first 20 events 10x slower (found: the warm-up placed at 20 +-2);
- ``mild``: the first 50 events 2x slower (found: at 50 +-5);
- ``heavy``: event 73 costs 30x the median (found: named slowest in at least 3 of 5 runs);
- ``slows``: every event's cost grows by 30 % from the first event to the last (found: the rate
  called not steady); its null is ``none`` (a steady job called not steady).

Coverage is the share of trials whose interval holds the true steady rate, with 5 runs (runs as
the clusters) and with 1 run (ten batches of its events as the clusters), at the interval's own
level (95 %): rows ``series-coverage-5-runs`` and ``series-coverage-1-run`` print it as
``coverage=`` beside ``level=``.
"""

from __future__ import annotations

import math
import random

from perflab.model.series import EventSeries, encode
from perflab.studies.run.series import summarise

EVENTS = 300
RUNS = 5
MEDIAN_MS = 10.0
ALPHA = 2.5  # Pareto tail of the event costs
RUN_SIGMA, RUN_TAIL, DRIFT, JITTER = 0.03, 0.03, 0.03, 0.10


def _costs(rng: random.Random, model: str) -> list[float]:
    """One input's event costs in ms (the same in every run), warm-up and heavy event planted."""
    # Pareto(alpha) scaled so that its median is MEDIAN_MS: median of Pareto(1, a) is 2 ** (1 / a)
    scale = MEDIAN_MS / 2 ** (1 / ALPHA)
    costs = [scale * rng.paretovariate(ALPHA) for _ in range(EVENTS)]
    if model == "step":
        costs[:20] = [c * 10 for c in costs[:20]]
    elif model == "mild":
        costs[:50] = [c * 2 for c in costs[:50]]
    elif model == "heavy":
        costs[73] = 30 * MEDIAN_MS
    elif model == "slows":
        costs = [c * (1 + 0.3 * i / (EVENTS - 1)) for i, c in enumerate(costs)]
    return costs


def _run_factors(rng: random.Random, runs: int) -> list[float]:
    drift = rng.uniform(-DRIFT, DRIFT)
    return [math.exp(rng.gauss(0, RUN_SIGMA)) * (1 + rng.expovariate(1 / RUN_TAIL))
            * (1 + drift * (r / max(1, runs - 1) - 0.5)) for r in range(runs)]


def _mean_factor(factors: list[float]) -> float:
    """E[run factor] given this campaign's drift: the log-normal's and the tail's means."""
    return math.exp(RUN_SIGMA ** 2 / 2) * (1 + RUN_TAIL) * 1.0  # the drift is centred: mean 1


def trial(model: str, seed: int, runs: int = RUNS) -> dict:
    """One simulated campaign of ``runs`` runs through the series analysis; what it found."""
    rng = random.Random(seed)
    costs = _costs(rng, model)
    factors = _run_factors(rng, runs)
    blobs, walls = [], []
    for f in factors:
        ms = [c * f * math.exp(rng.gauss(0, JITTER)) for c in costs]
        blobs.append(encode(EventSeries(list(range(EVENTS)), ms, [0] * EVENTS)))
        walls.append(sum(ms) / 1000 + 0.05)
    s = summarise(blobs, walls)
    assert s is not None
    warm = {"step": 20, "mild": 50}.get(model, 0)
    expected = sum(costs[warm:]) * _mean_factor(factors) * math.exp(JITTER ** 2 / 2) / 1000
    truth = (EVENTS - warm) / expected
    ci = s.steady_ci
    return {"warmup": s.warmup, "covered": bool(ci and ci["low"] <= truth <= ci["high"]),
            "level": ci["level"] if ci else 0.0, "slows": s.slows,
            "slowest": s.slowest[0] if s.slowest else None}


def verdict_check(runs: int = 200, seed: int = 0) -> list[str]:
    """The lines bench/verdicts.py prints (``runs`` trials per row)."""
    lines = []
    null = [trial("none", seed + i) for i in range(runs)]
    false_warm = sum(any(t["warmup"]) for t in null) / runs
    false_slow = sum(t["slows"] for t in null) / runs
    step = [trial("step", seed + runs + i) for i in range(runs)]
    found = sum(all(abs(w - 20) <= 2 for w in t["warmup"]) for t in step) / runs
    lines.append(f"verdict-check: series-warmup-step false_positive={false_warm:.3f} detection={found:.3f} "
                 f"runs={runs} (placed at 20+-2 in every run of the trial)")
    mild = [trial("mild", seed + 2 * runs + i) for i in range(runs)]
    found = sum(all(abs(w - 50) <= 5 for w in t["warmup"]) for t in mild) / runs
    lines.append(f"verdict-check: series-warmup-mild false_positive={false_warm:.3f} detection={found:.3f} "
                 f"runs={runs} (2x for 50 events, placed at 50+-5 in every run)")
    heavy = [trial("heavy", seed + 3 * runs + i) for i in range(runs)]
    found = sum(bool(t["slowest"] and t["slowest"]["event"] == 73 and t["slowest"]["slowest_in"] >= 3)
                for t in heavy) / runs
    lines.append(f"verdict-check: series-heavy-event detection={found:.3f} runs={runs} "
                 "(event 73 named slowest in >= 3 of 5 runs)")
    slows = [trial("slows", seed + 4 * runs + i) for i in range(runs)]
    found = sum(t["slows"] for t in slows) / runs
    lines.append(f"verdict-check: series-slows false_positive={false_slow:.3f} detection={found:.3f} runs={runs} "
                 "(30 % slower from first to last event: called not steady)")
    for model, rows in (("none", null), ("step", step)):
        cover = sum(t["covered"] for t in rows) / runs
        lines.append(f"verdict-check: series-coverage-5-runs-{model} coverage={cover:.3f} "
                     f"level={min(t['level'] for t in rows):.2f} runs={runs}")
    one = [trial("none", seed + 5 * runs + i, runs=1) for i in range(runs)]
    cover = sum(t["covered"] for t in one) / runs
    lines.append(f"verdict-check: series-coverage-1-run coverage={cover:.3f} "
                 f"level={min(t['level'] for t in one):.2f} runs={runs}")
    return lines
