"""How often the gate fails a pipeline for nothing, and how often it catches a real regression.

Simulated CI: pairs of `perflab run` campaigns of one command through the MockExecutor into a
real (in-memory SQLite) store, the first saved as the baseline, the second gated against it
at the gate's defaults. Noise model: every run log-normal around its campaign's level
(``sigma``), and every campaign's level log-normal around the true time (``drift``: another
day, another runner state, which no number of runs within a campaign averages out). Null
pairs share the true time; planted pairs differ by ``planted`` (above the threshold).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from perflab.measure.executor import MockExecutor
from perflab.model import RunSpec
from perflab.store import open_store
from perflab.studies.gate import DEFAULT_ALPHA, DEFAULT_FAIL_IF, GateConfig, evaluate, parse_threshold


@dataclass(frozen=True)
class SimConfig:
    """The simulated CI: pairs, runs per campaign, noise, the planted change, the gate."""

    pairs: int = 200
    runs: int = 10  # perflab run's --min-runs: the fewest a campaign of a long workload gets
    base_s: float = 0.5
    sigma: float = 0.02  # per-run log-normal noise (2 % CV)
    drift: float = 0.01  # per-campaign log-normal level shift (1 %)
    planted: float = 0.10  # twice the default 5 % threshold
    fail_if: str = DEFAULT_FAIL_IF
    alpha: float = DEFAULT_ALPHA
    seed: int = 0


@dataclass(frozen=True)
class SimResult:
    false_positive: float  # share of null pairs the gate failed
    detection: float  # share of planted pairs the gate failed
    runs: int  # pairs of each kind
    null_beyond: float = 0.0  # share of null pairs whose median change alone passed the threshold

    def line(self, name: str = "gate-null") -> str:
        return (f"verdict-check: {name} false_positive={self.false_positive:.3f} "
                f"detection={self.detection:.3f} runs={self.runs}")


def _campaign(store, host_id: int, level: float, cfg: SimConfig, rng: random.Random) -> int:
    """One stored `run` campaign of ``cfg.runs`` mock runs around ``level`` seconds."""
    executor = MockExecutor(lambda spec: level * rng.lognormvariate(0.0, cfg.sigma))
    spec = RunSpec(argv=("work",), label="work")
    cid = store.start_campaign("run", {"commands": [{"name": "work"}]}, host_id=host_id)
    for rep in range(cfg.runs):
        store.add_measurement(cid, executor.run(spec), {}, rep=rep, label="work")
    store.finish_campaign(cid, "done")
    return cid


def simulate(cfg: SimConfig = SimConfig()) -> SimResult:
    """Gate ``cfg.pairs`` null and ``cfg.pairs`` planted campaign pairs; count the failures."""
    rng = random.Random(cfg.seed)
    thresholds = (parse_threshold(cfg.fail_if),)
    failed = {False: 0, True: 0}
    beyond = 0
    with open_store(":memory:") as store:
        host = store.add_host({"hostname": "sim"}, None)
        for _ in range(cfg.pairs):
            for planted in (False, True):
                level_a = cfg.base_s * rng.lognormvariate(0.0, cfg.drift)
                level_b = cfg.base_s * (1 + cfg.planted * planted) * rng.lognormvariate(0.0, cfg.drift)
                a = _campaign(store, host, level_a, cfg, rng)
                store.set_baseline("sim", a)
                b = _campaign(store, host, level_b, cfg, rng)
                result = evaluate(GateConfig("sim", b, thresholds, cfg.alpha, seed=cfg.seed), store)
                failed[planted] += result.failed
                if not planted:
                    beyond += any(t.beyond(ln.row) for ln in result.lines for t in ln.thresholds)
    return SimResult(failed[False] / cfg.pairs, failed[True] / cfg.pairs, cfg.pairs, beyond / cfg.pairs)


def verdict_check(runs: int = 200) -> SimResult:
    """The gate's line for bench/verdicts.py: ``runs`` null and planted pairs at the defaults."""
    result = simulate(SimConfig(pairs=runs))
    print(result.line(), flush=True)
    return result
