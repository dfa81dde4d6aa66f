"""The optimum of perflab instances: the smallest N not significantly below the best, never past
the CPU count without a significant gain; evidence and direction said; the harness under every
noise model. Statistics through the MockExecutor with exact numbers."""

from __future__ import annotations

import json
import math

import pytest
from rich.console import Console

from perflab.checks.instances import one_node_box, optimum_check, verdict_lines
from perflab.measure.executor import MockExecutor
from perflab.model import MetricPattern, RunResult, Workload
from perflab.platform.machine import Machine
from perflab.report.terminal.instances import render
from perflab.store import open_store
from perflab.studies import run_study
from perflab.studies.instances import study as instances
from perflab.studies.instances.study import InstancesConfig, InstancesResult
from perflab.studies.instances.optimum import MIN_ROUNDS, choose, min_rounds, mw_greater


@pytest.fixture
def store(tmp_path):
    with open_store(str(tmp_path / "perflab.db")) as s:
        yield s


def _box(ncpu: int) -> Machine:
    return Machine(topology=one_node_box(ncpu), metadata={"hostname": "mock"})


# A machine that gains nothing past 2 CPUs, with the round-to-round jitter of a real one: each
# (round, N) point's copies share one factor. N = 3's median (2.02 copies/s) is above N = 2's
# (2.0) by luck alone: the highest median picked 3 copies on 2 CPUs (the README's tour did).
JITTER = {  # (round, n) -> factor on every copy's time
    (0, 2): 1.00, (1, 2): 0.97, (2, 2): 1.03, (3, 2): 0.99, (4, 2): 1.01,
    (0, 3): 0.98, (1, 3): 1.00, (2, 3): 0.96, (3, 3): 1.04, (4, 3): 0.99,
    (0, 4): 1.02, (1, 4): 0.98, (2, 4): 1.01, (3, 4): 1.05, (4, 4): 0.99,
}


def flat_past(ncpu: int, wait: float = 0.0):
    """N copies take max(1, N (1 - wait) / ncpu) s, times the point's jitter."""
    def model(spec):
        n, rnd = spec.params["n"], spec.params["round"]
        return max(1.0, n * (1 - wait) / ncpu) * JITTER.get((rnd, n), 1.0)
    return model


def test_flat_machine_past_the_cpus_gives_the_cpu_count_not_the_highest_median(store):
    ex = MockExecutor(flat_past(2))
    cfg = InstancesConfig(Workload("mock", ("work",)), ns=(1, 2, 3, 4), policies=("none",), reps=5)
    res = run_study(instances, cfg, store, ex, machine=_box(2))
    (scan,) = res.scans
    assert res.optimum_n == 2
    assert scan.top_n == 3  # the highest median is past the 2 CPUs, by luck
    assert (scan.best_n, res.cpus) == (2, 2)
    past = [s for s in scan.steps if s.kind == "past"]
    assert [(s.n, s.against, s.significant) for s in past] == [(3, 2, False), (4, 2, False)]
    assert all(0.1 < s.p_adjusted <= 1 and s.ci.level == pytest.approx(0.9048, abs=1e-4) for s in past)
    assert "no N past the 2 CPUs is significantly better than N = 2" in scan.reason
    assert "Holm over 2" in scan.reason


def test_a_real_gain_past_the_cpus_is_the_optimum_and_the_output_says_why(store):
    # copies wait 1/6 of their time alone: 3 copies on 2 CPUs give 2.4 copies/s, +20 %
    ex = MockExecutor(flat_past(2, wait=1 / 6))
    cfg = InstancesConfig(Workload("mock", ("work",)), ns=(1, 2, 3, 4), policies=("none",), reps=5)
    res = run_study(instances, cfg, store, ex, machine=_box(2))
    (scan,) = res.scans
    assert res.optimum_n == 3
    n3 = next(s for s in scan.steps if s.kind == "past" and s.n == 3)
    # every round of N = 3 above every round of N = 2: p = 1/252, Holm over 2 points past the CPUs
    assert n3.p == pytest.approx(1 / 252) and n3.p_adjusted == pytest.approx(2 / 252) and n3.significant
    assert "past the 2 CPUs, yet significantly better than N = 2" in scan.reason
    con = Console(record=True, width=100)
    render(res, con, "mock")
    text = con.export_text()
    assert "answer: N = 3, policy none" in " ".join(text.split())
    assert "copies gain from running together" in " ".join(text.split())


def test_the_smallest_n_not_significantly_below_the_best():
    # 4 CPUs saturated at 3 copies (memory bandwidth): N = 4's median is 0.5 % above N = 3's
    samples = {1: [1.0, 1.01, 0.99, 1.0, 1.02], 2: [2.0, 1.98, 2.02, 2.01, 1.99],
               3: [2.9, 2.95, 3.02, 2.97, 3.0], 4: [2.96, 2.99, 3.01, 3.03, 2.93]}
    c = choose(samples, capacity=4)
    assert (c.best_n, c.optimum_n) == (4, 3)
    assert [(s.n, s.kind, s.significant) for s in c.steps] == [(1, "below", True), (2, "below", True),
                                                               (3, "below", False)]
    assert c.steps[0].p == pytest.approx(1 / 252)
    assert "the smallest N not significantly below N = 4" in c.reason


def test_exact_statistics():
    assert MIN_ROUNDS == min_rounds(0.05) == 4  # 3 against 3 reaches 1/20 = 0.05, never below it
    assert min_rounds(0.01) == 5
    assert mw_greater([2, 3, 4, 5, 6], [1, 1.1, 1.2, 1.3, 1.4]) == pytest.approx(1 / 252)
    # one swap: U = 24 of 25, P(U >= 24) = 2/252
    assert mw_greater([1.35, 3, 4, 5, 6], [1, 1.1, 1.2, 1.3, 1.4]) == pytest.approx(2 / 252)
    assert mw_greater([1] * 5, [1] * 5) > 0.5  # ties give no evidence
    assert mw_greater([1, 2], [3, 4]) == 1.0


def test_one_round_is_not_enough_evidence_and_prints_no_zero_percent_interval(store):
    ex = MockExecutor(flat_past(2))
    cfg = InstancesConfig(Workload("mock", ("work",)), ns=(1, 2, 3), policies=("none",), reps=1)
    res = run_study(instances, cfg, store, ex, machine=_box(2))
    assert res.optimum_n is None and not res.failed
    assert all(p.ci is None for p in res.scans[0].points) and res.level == 0.0
    assert res.verdict().startswith("not enough evidence: 1 round per point; a test of one N against "
                                    "another needs at least 4 (use --reps 5)")
    assert "not an answer" in res.verdict()
    con = Console(record=True, width=120)
    render(res, con, "mock")
    text = con.export_text()
    assert "0%" not in text and "CI [" not in text
    assert "1 round, no CI" in text and "answer: not enough evidence: 1 round per point" in text
    assert any("1 round per point: too few to test" in n for n in res.notes)
    # the JSON holds the same sentence, and reads back
    summary = store.campaign(res.campaign_id).summary
    assert summary["verdict"] == res.verdict() and summary["optimum_n"] is None
    assert InstancesResult.from_dict(json.loads(json.dumps(summary))).verdict() == res.verdict()
    # the report and the listing say the same sentence
    from perflab.report.verdicts import instances_verdict

    assert instances_verdict(summary) == f"Answer: {res.verdict()}"


def test_every_interval_prints_its_real_level(store):
    ex = MockExecutor(flat_past(2, wait=1 / 6))
    cfg = InstancesConfig(Workload("mock", ("work",)), ns=(1, 2, 3, 4), policies=("none",), reps=5)
    res = run_study(instances, cfg, store, ex, machine=_box(2))
    con = Console(record=True, width=250)
    render(res, con, "mock")
    text = con.export_text()
    assert "none (94% CI)" in text  # 5 rounds: min..max of a median, 93.75 %
    assert "90% CI" in res.verdict()  # Moses' interval of the ratio: 90.48 % at 5 against 5
    assert res.verdict().count("% CI") == res.verdict().count("CI")


def _metric_model(ex):
    def model(spec):
        n = spec.params["n"]
        wall = max(1.0, n / 2)
        return RunResult(wall_ns=round(wall * 1e9), user_s=wall, sys_s=0, maxrss_kb=1, minflt=0, majflt=0,
                         nvcsw=0, nivcsw=0, exit_code=0, start_ns=ex.clock_ns,
                         end_ns=ex.clock_ns + round(wall * 1e9),
                         metrics={"events": 10.0, "events_per_s": 10.0 / wall, "spm": 0.5})
    return model


@pytest.mark.parametrize("metric, higher, unit, said", [
    ("events_per_s", True, "events/s",
     "ranked by machine throughput in events/s, higher is better: the copies' total 'events' over the "
     "makespan, from the primary metric events_per_s (declared higher is better)"),
    # declared lower is better: the name's "_per_s" must not make it a rate to add up
    ("events_per_s", False, "copies/s", "the primary metric events_per_s (declared lower is better)"),
    ("spm", False, "copies/s", "the primary metric spm (declared lower is better) names no work count"),
    (None, True, "copies/s", "the workload declares no primary metric"),
])
def test_the_output_says_which_metric_and_direction_it_ranked_by(store, metric, higher, unit, said):
    ex = MockExecutor()
    ex.model = _metric_model(ex)
    wl = Workload("m", ("m",), metrics=(MetricPattern(r"(?P<events>\d+) (?P<events_per_s>[\d.]+) (?P<spm>[\d.]+)"),),
                  primary_metric=metric, higher_is_better=higher)
    res = run_study(instances, InstancesConfig(wl, ns=(1, 2, 3), policies=("none",), reps=4), store, ex,
                    machine=_box(2))
    assert res.unit == unit and said in res.ranked_by
    assert res.optimum_n == 2
    con = Console(record=True, width=300)
    render(res, con, "m")
    text = con.export_text()
    assert said in text
    if metric:
        way = "higher" if higher else "lower"
        assert f"({metric} per copy, {way} is better," in text


def test_harness_short_under_every_noise_model():
    # a few dozen campaigns per model (the 200-campaign figures are in docs/instances.md)
    for model in ("quiet", "loaded"):
        fp, det = optimum_check(model, runs=20, seed=3)
        assert fp <= 0.1 and det >= 0.8, (model, fp, det)
    fp, det = optimum_check("two-speed", runs=20, seed=3)
    assert fp <= 0.1  # its detection at 5 rounds is the documented shortfall


def test_verdict_lines_name_every_model(monkeypatch):
    # Each line's rates are the tests above; here every model gets its line, one of each kind run
    # for real (a campaign of each kind is seconds, 20 lines of them most of this file's time).
    from perflab.checks import instances as ic

    def one_real(fn, real_model, fake):
        def rates(*a, **k):
            model = k.get("model", a[0] if isinstance(a[0], str) else ic.FORK_MODEL)
            return fn(*a, **k) if model == real_model else fake
        return rates
    monkeypatch.setattr(ic, "optimum_check", one_real(ic.optimum_check, "loaded", (0.0, 1.0)))
    monkeypatch.setattr(ic, "rates_asked", one_real(ic.rates_asked, "two-speed", (0.0, 1.0, 5)))
    monkeypatch.setattr(ic, "verdict_check", one_real(ic.verdict_check, "quiet", (0.0, 1.0)))
    monkeypatch.setattr(ic, "fork_rates_asked", one_real(ic.fork_rates_asked, "loaded", (0.0, 1.0, 5)))
    lines = verdict_lines(runs=1)
    names = [line.split()[1] for line in lines]
    models = ("quiet", "shift", "two-speed", "skewed", "loaded", "vcpu-states")
    assert names == ([f"instances-{m}" for m in models] + ["instances-two-speed-asked", "instances-vcpu-states-asked"]
                     + [f"instances-fork-{m}" for m in models]
                     + ["instances-fork-two-speed-asked", "instances-fork-loaded-asked"])
    assert all(math.isfinite(float(line.split("false_positive=")[1].split()[0])) for line in lines)
