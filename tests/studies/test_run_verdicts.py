"""`perflab run`'s verdicts: two speeds named, comparisons with a reference, ranking by the user's
metric in its direction, a missed --precision target, contradictory run limits."""

from __future__ import annotations

import json
import random

import pytest

from perflab.measure.executor import MockExecutor
from perflab.platform.machine import Machine
from perflab.platform.topology import Topology
from perflab.store import open_store
from perflab.studies.run import study as run_mod
from perflab.studies import run_study
from perflab.studies.run.study import Command, RunConfig
from perflab.studies.run.result import RunStudyResult, verdict

MACHINE = Machine(topology=Topology(cpus=(), cores=(), sockets=(), nodes=()), metadata={"hostname": "t"})


def study(config: RunConfig, model) -> RunStudyResult:
    with open_store(":memory:") as store:
        return run_study(run_mod, config, store, MockExecutor(model), machine=MACHINE)


def cmds(*names: str) -> tuple[Command, ...]:
    return tuple(Command(n, (n,)) for n in names)


def test_two_speeds_are_named_not_called_outliers_or_noise():
    # 30 runs at 50 or 80 ms (a coin per run), 1 % spread: a two-speed sleep
    rng = random.Random(5)
    res = study(RunConfig(commands=cmds("two", "one"), runs=30, seed=1),
                lambda spec: (0.05 if spec.label == "one" or rng.random() < 0.5 else 0.08)
                * rng.lognormvariate(0, 0.01))
    two, one = res.benchmarks
    assert one.modes is None
    assert two.modes and two.modes["measure"] == "wall time"
    slow_n = sum(t > 0.065 for t in two.times)
    fast, slow = two.modes["modes"]
    assert (fast["n"], slow["n"]) == (30 - slow_n, slow_n) and 0.049 < fast["center"] < 0.051
    assert 0.079 < slow["center"] < 0.081 and fast["share"] == pytest.approx(1 - slow_n / 30)
    text = " ".join(res.warnings)
    assert f"'two': two speeds, not outliers: {fast['share']:.0%} of runs at " in text
    assert "outliers (modified Z-score" not in text and "noisy" not in text
    v = verdict(res)
    assert "two speeds (two " in v and "its median rests on the mix of speeds" in v
    # 'one' ran at the fast speed only: compared with 'two's fast runs, not with its mixture
    assert "one: compared within the fast speed only" in v and "made within each speed" in v
    assert one.relative["speeds"].startswith("compared within the fast speed only")
    assert 0.97 < one.relative["ratio"] < 1.03 and not one.relative["significant"]
    back = RunStudyResult.from_dict(json.loads(json.dumps(res.as_dict())))
    assert back.benchmarks[0].modes["modes"][1]["share"] == pytest.approx(slow["share"])


def test_one_skewed_speed_keeps_its_outlier_warning():
    rng = random.Random(2)
    res = study(RunConfig(commands=cmds("a"), runs=30),
                lambda spec: 0.05 * (1 + (rng.expovariate(1) if rng.random() < 0.1 else 0)) * rng.lognormvariate(0, 0.01))
    assert res.benchmarks[0].modes is None and "two speeds" not in " ".join(res.warnings)


def test_the_first_command_is_the_reference_and_faster_is_called():
    times = {"a": 0.10, "b": 0.12, "c": 0.08, "d": 0.10}
    rng = random.Random(1)
    res = study(RunConfig(commands=cmds(*times), runs=20, seed=1),
                lambda spec: times[spec.label] * rng.lognormvariate(0, 0.01))
    rel = {b.command: b.relative for b in res.benchmarks}
    assert rel["a"]["reference"] and res.reference.command == "a"
    assert rel["b"]["verdict"] == "slower" and rel["c"]["verdict"] == "faster" and rel["d"]["verdict"] is None
    assert rel["b"]["target"] == pytest.approx(1 - 0.05 / 3)  # Bonferroni over the 3 comparisons
    v = verdict(res)
    assert v.startswith("a: median") and "ranked by wall time (lower is better)" in v
    assert ", slower: b 1.21x [" in v and ", faster: c 0.805x [" in v and ", not shown to differ from it: d (" in v
    assert res.as_dict()["reference"] == "a" and res.as_dict()["fastest"] == "c"
    # --reference names another
    res2 = study(RunConfig(commands=cmds(*times), runs=20, seed=1, reference="c"),
                 lambda spec: times[spec.label] * rng.lognormvariate(0, 0.01))
    rel2 = {b.command: b.relative for b in res2.benchmarks}
    assert rel2["c"]["reference"] and {rel2[k]["verdict"] for k in "abd"} == {"slower"}


def test_precision_missed_at_max_runs_is_a_warning_with_the_precision_reached():
    rng = random.Random(3)
    res = study(RunConfig(commands=cmds("a"), precision=0.01, max_runs=12, seed=1),
                lambda spec: 0.1 * rng.lognormvariate(0, 0.2))
    assert res.stopped_by == "max-runs"
    line = next(w for w in res.warnings if "--precision" in w)
    assert line.startswith("'a': --precision 1.0% not reached: stopped at --max-runs 12 with the median's ")
    assert "within +-" in line
    # a quiet command reaches it and gets no such line
    quiet = study(RunConfig(commands=cmds("a"), precision=0.05, max_runs=40, seed=1),
                  lambda spec: 0.1 * rng.lognormvariate(0, 0.001))
    assert not any("--precision" in w for w in quiet.warnings)


def test_harness_null_can_fail_the_rule_against_the_sample_fastest():
    # 8 equal commands under the quiet model: testing against the sample-fastest calls one
    # "slower" in more than 5 % of trials; against the reference, not
    from perflab.checks import run as run_check

    results = [run_check.study("quiet", 8, 0.0, seed) for seed in range(40)]
    assert sum(bool(run_check.against_fastest(r)) for r in results) >= 3
    assert sum(bool(run_check.called(r)) for r in results) <= 1


def test_harness_planted_2_percent_found_against_the_reference():
    from perflab.checks import run as run_check

    found = [run_check.called(run_check.study("quiet", 5, run_check.PLANTED, seed)) for seed in range(10)]
    assert sum(f.get("c1") == "slower" for f in found) >= 7


def test_harness_prints_a_line_per_noise_model_and_command_count(monkeypatch):
    from perflab.checks import run as run_check
    from perflab.checks.noise import MODELS

    # Every model and command count gets its line; one of them is run for real (each is a campaign
    # of 5 or 8 commands, about 2 s; the rates themselves are the tests above and below).
    real, asked = run_check.rates, []

    def rates(name, k, trials, seed=0):
        asked.append((name, k))
        return real(name, k, trials, seed) if (name, k) == ("two-speed", 5) else (0.0, 0.0, 1.0)
    monkeypatch.setattr(run_check, "rates", rates)
    lines = run_check.verdict_check(runs=1, asked=False)  # the asked rows: the test below
    assert {(n, k) for n in MODELS for k in (5, 8)} <= set(asked)
    for name in MODELS:
        for k in (5, 8):
            assert any(ln.startswith(f"verdict-check: run-{name}-{k}-commands false_positive=") and
                       "sample_fastest_false_positive=" in ln for ln in lines), name


def test_the_harness_reruns_at_the_runs_the_output_asks_for():
    from perflab.checks import run as run_check

    # one seeded trial each (the 200-trial figures are docs/statistics.md's): the null campaign
    # and its rerun call nothing, the planted 2 % is called at the runs asked for
    fp, det = run_check.rates_asked("two-speed", 5, 1, seed=0)
    assert fp == 0.0 and det == 1.0


def test_commands_at_two_speeds_are_compared_within_them_and_the_output_asks_for_runs():
    from perflab.checks import run as run_check

    # The two-speed model (1.48x, 40 % slow in stretches): 3 % found within the speeds at 80 runs
    found = run_check.study("two-speed", 2, 0.03, seed=3, runs=80)
    rel = found.benchmarks[1].relative
    assert rel["verdict"] == "slower" and rel["speeds"].startswith("compared within two speeds: ")
    assert rel["low"] <= 1.03 <= rel["high"] and "van Elteren" in rel["method"]
    assert any(w.startswith("'c1' against 'c0': compared within two speeds") for w in found.warnings)
    # equal commands at about 30 runs: nothing called, and the runs that would see 1 % asked for
    null = run_check.study("two-speed", 2, 0.0, seed=4)
    assert not run_check.called(null)
    asked = run_check.asked(null)
    assert asked is not None and asked > null.benchmarks[1].n
