"""How often the gate fails a pipeline for nothing, and how often it catches a real regression.

Simulated CI: `perflab run` campaigns of one command through the MockExecutor into a real
(in-memory SQLite) store; the baseline saved ``saves`` times (its history: one save is the
usual single baseline campaign), then a candidate gated against it at the gate's defaults.
Every campaign draws its runs from a shared noise model (checks/noise.py: its own level shift,
two speeds, skew, drift, bursts), so a null pair differs by everything but the code. Null
candidates share the true time; planted ones are ``planted`` slower (twice the 5 % threshold).
A pipeline fails on exit 1 (regression) and on exit 3 (inconclusive: too few runs, two speeds
not comparable): both count, as false failures in the null and as detections when planted.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from perflab.checks import until
from perflab.checks.noise import STUDY_MODELS
from perflab.measure.executor import MockExecutor
from perflab.model import RunSpec
from perflab.platform.machine import Machine
from perflab.platform.topology import Topology
from perflab.store import open_store
from perflab.studies import run_study
from perflab.studies.gate.looks import against
from perflab.studies.gate.study import DEFAULT_ALPHA, DEFAULT_FAIL_IF, GateConfig, evaluate, parse_threshold
from perflab.studies.run import study as run


@dataclass(frozen=True)
class SimConfig:
    """The simulated CI: pairs, runs per campaign, noise, baseline saves, the planted change."""

    pairs: int = 200
    model: str = "quiet"
    runs: int = 10  # perflab run's --min-runs: the fewest a campaign of a long workload gets
    saves: int = 1  # baseline campaigns saved before the candidate (its history)
    base_s: float = 0.5
    planted: float = 0.10  # twice the default 5 % threshold
    fail_if: str = DEFAULT_FAIL_IF
    alpha: float = DEFAULT_ALPHA
    seed: int = 0


@dataclass(frozen=True)
class SimResult:
    false_positive: float  # share of null candidates whose pipeline failed (exit 1 or 3)
    detection: float  # share of planted candidates whose pipeline failed
    runs: int  # candidates of each kind
    unsure: float = 0.0  # share of null candidates failed as inconclusive (exit 3)
    null_beyond: float = 0.0  # share of null candidates whose median change alone passed the threshold

    def line(self, name: str = "gate-quiet") -> str:
        return (f"verdict-check: {name} false_positive={self.false_positive:.3f} "
                f"detection={self.detection:.3f} runs={self.runs}")


# Per model, the runs a campaign needs for the power rule to let a null pass (the gate's own
# "need about N runs a side" at the model's spread, with room), and the saves it needs.
SETTINGS: dict[str, dict] = {
    "quiet": dict(runs=10),
    "shift": dict(runs=10),  # one campaign a side: cannot meet the goal (docs/ci.md)
    "shift-history": dict(model="shift", runs=10, saves=20),
    "two-speed": dict(runs=40),
    "vcpu-states": dict(runs=40),
    "skewed": dict(runs=30),
    "loaded": dict(runs=30),
}


def _campaign(store, host_id: int, level: float, cfg: SimConfig, rng: random.Random) -> int:
    """One stored `run` campaign of ``cfg.runs`` mock runs around ``level`` seconds."""
    noise = STUDY_MODELS[cfg.model].campaign(rng)
    executor = MockExecutor(lambda spec: level * noise.factor())
    spec = RunSpec(argv=("work",), label="work")
    cid = store.start_campaign("run", {"commands": [{"name": "work"}]}, host_id=host_id)
    for rep in range(cfg.runs):
        store.add_measurement(cid, executor.run(spec), {}, rep=rep, label="work")
    store.finish_campaign(cid, "done")
    return cid


def simulate(cfg: SimConfig = SimConfig()) -> SimResult:
    """Gate ``cfg.pairs`` null and ``cfg.pairs`` planted candidates; count the failed pipelines."""
    rng = random.Random(cfg.seed)
    thresholds = (parse_threshold(cfg.fail_if),)
    failed = {False: 0, True: 0}
    unsure = beyond = 0
    with open_store(":memory:") as store:
        host = store.add_host({"hostname": "sim"}, None)
        for i in range(cfg.pairs):
            for planted in (False, True):
                name = f"sim-{i}-{int(planted)}"
                for _ in range(cfg.saves):
                    store.set_baseline(name, _campaign(store, host, cfg.base_s, cfg, rng))
                b = _campaign(store, host, cfg.base_s * (1 + cfg.planted * planted), cfg, rng)
                result = evaluate(GateConfig(name, b, thresholds, cfg.alpha, seed=cfg.seed), store)
                failed[planted] += result.exit_status != 0
                if not planted:
                    unsure += result.exit_status == 3
                    beyond += any(t.beyond(ln.row) for ln in result.lines for t in ln.thresholds)
    n = cfg.pairs
    return SimResult(failed[False] / n, failed[True] / n, n, unsure / n, beyond / n)


def verdict_lines(runs: int = 200, seed: int = 0) -> list[str]:
    """One line per noise model (and shift with a history of saves) for bench/verdicts.py."""
    out = []
    for name, kw in SETTINGS.items():
        kw = {"model": name, **kw}
        res = simulate(SimConfig(pairs=runs, seed=seed, **kw))
        out.append(res.line(f"gate-{name}") + f" runs_per_campaign={kw['runs']} saves={kw.get('saves', 1)}")
    return out


# --- --until-decided: the candidate's runs in looks against the stored baseline -----------------

BASE_S = 0.5
UNTIL_BASELINE_RUNS = 30  # the baseline's runs: a CI recipe's `--runs 30` on the default branch
UNTIL_MACHINE = Machine(Topology((), (), (), ()), {"hostname": "sim"})


@dataclass(frozen=True)
class UntilTrial:
    """One simulated pipeline gated --until-decided: its exit status, the looks' record, the runs."""

    exit_status: int
    sequential: dict
    runs: int


def until_decided_trial(model: str, planted: float, seed: int, baseline_runs: int = UNTIL_BASELINE_RUNS,
                        fail_if: str = DEFAULT_FAIL_IF, max_runs: int | None = None, saves: int = 1) -> UntilTrial:
    """A baseline of ``baseline_runs`` runs saved (``saves`` times: its history), then `perflab run
    --baseline --fail-if --until-decided` of a candidate ``planted`` slower, all `perflab run`
    campaigns of the run study through the MockExecutor (each campaign its own draw of the noise
    model), gated by the gate's own evaluate."""
    rng = random.Random(f"gate-until-{model}-{planted}-{seed}")
    thresholds = (parse_threshold(fail_if),)
    command = run.Command("work", ("work",))

    def executor() -> MockExecutor:
        noise = STUDY_MODELS[model].campaign(rng)
        return MockExecutor(lambda spec: BASE_S * noise.factor() * noise.burst_hits())

    with open_store(":memory:") as store:
        for _ in range(saves):
            base = run_study(run, run.RunConfig(commands=(command,), runs=baseline_runs, seed=seed), store,
                             executor(), machine=UNTIL_MACHINE)
            store.set_baseline("main", base.campaign_id)
        gate = against(store, "main", thresholds, [("work", {})], None, DEFAULT_ALPHA)
        noise = STUDY_MODELS[model].campaign(rng)
        cand = run_study(run, run.RunConfig(commands=(command,), until_decided=True, gate=gate, seed=seed,
                                            max_runs=max_runs), store,
                         MockExecutor(lambda spec: BASE_S * (1 + planted) * noise.factor() * noise.burst_hits()),
                         machine=UNTIL_MACHINE)
        result = evaluate(GateConfig("main", cand.campaign_id, thresholds, DEFAULT_ALPHA, seed=seed), store)
    return UntilTrial(result.exit_status, cand.sequential or {}, cand.benchmarks[0].n + cand.benchmarks[0].failed)


def rates_until_decided(model: str, trials: int, seed: int = 0, planted: float = SimConfig.planted) -> dict[str, float]:
    """--until-decided under ``model``: false failures over all looks (exit 1 on a null candidate),
    detection of the planted +10 % (exit 1), the share of null pipelines that passed (the threshold
    ruled out), of planted ones left undecided, and the median and 90th percentile of the runs a
    candidate took (null and planted together)."""
    nulls = [until_decided_trial(model, 0.0, seed + i) for i in range(trials)]
    found = [until_decided_trial(model, planted, seed + trials + i) for i in range(trials)]
    return until.rates(nulls, found, [t.runs for t in nulls + found], lambda t: t.exit_status == 1,
                       lambda t: t.exit_status == 1, lambda t: t.exit_status == 0)


def until_decided_lines(runs: int = 40, seed: int = 0) -> list[str]:
    """The --until-decided rows of the gate: every noise model, the baseline's runs named."""
    return [until.line(f"gate-until-decided-{name}", rates_until_decided(name, runs, seed), runs)
            + f" baseline_runs={UNTIL_BASELINE_RUNS}" for name in STUDY_MODELS]
