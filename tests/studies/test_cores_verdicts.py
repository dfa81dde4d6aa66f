"""perflab cores on unkind machines: persistence that survives noisy rounds, one result behind the
table, the sentence and the JSON (a property test over simulated scans), a smallest detectable
slowdown the harness bears out, and the workload's own metric in its own direction."""

from __future__ import annotations

import json
import math
import random
import re

import numpy as np
import pytest
from rich.console import Console

from perflab.checks import cores as cores_check
from perflab.model import RunResult, Workload
from perflab.report.terminal.cores import render
from perflab.store import open_store
from perflab.studies import run_study
from perflab.studies.cores import study as cores
from perflab.studies.cores.study import CoresConfig, CoresResult
from perflab.studies.cores.detect import called_slow, detectable
from perflab.studies.cores.result import NAMED, named
from perflab.measure.executor import MockExecutor
from perflab.platform.machine import Machine

WL = Workload("mock", ("work",))


def _text(res: CoresResult, width: int = 200) -> str:
    con = Console(record=True, width=width, color_system=None)
    render(CoresResult.from_dict(json.loads(json.dumps(res.as_dict()))), con, "mock")
    return con.export_text()


def _study(config: CoresConfig, model, n_cores: int) -> CoresResult:
    with open_store(":memory:") as store:
        return run_study(cores, config, store, MockExecutor(model),
                         machine=Machine(cores_check.smt_box(n_cores), {"loadavg": [0.0]}))


# --- item 1: persistence that survives noisy rounds ------------------------------------------------

def test_a_competitor_under_noise_that_flips_some_rounds_is_slow_not_intermittent():
    # CPU 1 +24 % on a noisy 2-CPU machine: noise flips about one round in six below the other
    # CPU (as seen here: slower in 25 of 30 rounds). "Slower in all but 10 % of rounds" called that
    # intermittent and printed "no CPU is persistently slower" under a table that said otherwise.
    # Five blocks of 12 rounds: with 2 CPUs the block-to-block spread has blocks - 1 degrees of
    # freedom, and each block's median must stand clear of 15 % noise.
    rng = random.Random(11)

    def model(spec):
        return 0.05 * (1.24 if spec.cpus[0] == 1 else 1.0) * rng.lognormvariate(0, 0.15)

    res = _study(CoresConfig(WL, rounds=60, min_rounds=60, blocks=5), model, n_cores=1)
    row = res.cpus[1]
    assert row.rounds - row.slower_rounds >= 4  # noise really flipped rounds
    assert row.verdict == "slow" and named(res) == {1: "slow"}
    assert "no CPU is persistently slower" not in res.verdict and res.verdict.startswith("slow core 0 (CPUs 1)")


def test_competitor_in_80_percent_of_rounds_on_a_loaded_machine_is_named_alone():
    out = cores_check.checks(runs=4, seed=2, models=("loaded",), cases=("competitor",))
    (name, fp, det, n), = out
    assert name == "cores-competitor-loaded" and det == 1.0 and fp == 0.0


def test_intermittent_cpu_is_named_with_its_rounds_in_the_verdict():
    rng = random.Random(5)

    def model(spec):
        x = 0.05 * rng.lognormvariate(0, 0.01)
        return x * (1.4 if spec.cpus[0] == 2 and spec.params["round"] % 4 != 3 else 1.0)

    res = _study(CoresConfig(WL, rounds=20, min_rounds=20), model, n_cores=2)
    row = res.cpus[2]
    assert row.verdict == "intermittent" and row.normal == (3, 7, 11, 15, 19)
    assert row.slow_rounds == tuple(r for r in range(20) if r % 4 != 3)
    assert "CPU 2 slower than the rest only in rounds 0-2,4-6,8-10,12-14,16-18" in res.verdict
    assert "at the others' level in rounds 3,7,11,15,19" in res.verdict


# --- item 2: table, sentence and JSON from one value: a property test -----------------------------

def _agree(res: CoresResult) -> None:
    data = json.loads(json.dumps(res.as_dict()))
    text = _text(res)
    lines = text.splitlines()
    slow_rows = {r.cpu for r in res.cpus if r.verdict == "slow"}
    assert slow_rows == {c for s in res.slow for c in s.cpus}
    assert slow_rows == {c["cpu"] for c in data["cpus"] if c["verdict"] == "slow"}
    assert {c for s in data["slow"] for c in s["cpus"]} == slow_rows
    assert all(r.verdict for r in res.cpus), "an empty verdict cell"
    assert data["verdict"] == res.verdict
    for s in res.slow:
        assert f"slow core {s.core} " in res.verdict
    unresolved = {r.cpu for r in res.cpus if r.verdict == "unresolved"}
    assert ("no CPU is persistently slower" in res.verdict) == (not slow_rows and not unresolved
                                                                and res.mde is not None and res.mde != math.inf)
    assert ("cannot tell whether a CPU is persistently slower" in res.verdict) == (
        not slow_rows and (bool(unresolved) or res.mde is None or res.mde == math.inf))
    tl = res.timeline
    for r in res.cpus:
        sentence = {
            "intermittent": rf"CPU {r.cpu} slower than the rest only in rounds? ",
            "contention": rf"CPU {r.cpu} slower than the rest only in blocks? .*: contention in that stretch",
            "unresolved": rf"CPU {r.cpu} \(",
        }
        for verdict, pattern in sentence.items():
            assert bool(re.search(pattern, res.verdict)) == (r.verdict == verdict), (r.cpu, r.verdict, res.verdict)
        row = next(ln for ln in lines if re.match(rf"│\s+{r.cpu} │", ln))
        shown = {"unresolved": "cannot tell"}.get(r.verdict, r.verdict.split()[0])
        assert ("SLOW" in row) == (r.verdict == "slow") and shown in row.lower()
        if r.verdict == "slow":
            # slower in every block, and the scan told a slow core from a state of the moment
            assert tl is not None and tl.tells and all(v is not None and v > 0 for v in r.block_levels)
            assert f"in each of {len(tl.blocks)} blocks" in res.verdict
            # named below the detectable slowdown only with a line saying why
            if res.mde is not None and r.ratio - 1 < res.mde:
                assert any(n.startswith(f"CPU {r.cpu} is slower by") for n in res.notes), res.notes
                assert f"note: CPU {r.cpu} is slower by" in text
    assert set(named(res)) == {c["cpu"] for c in data["cpus"] if c["verdict"] in NAMED}
    verdicts = [ln for ln in lines if ln.startswith("verdict: ")]
    assert len(verdicts) == 1 and "—" not in text
    assert "smallest detectable slowdown: " in text  # a number, or why there is none
    if res.mde is not None and res.mde != math.inf:
        assert f"smallest detectable slowdown: {res.mde:.1%}" in text
        assert data["mde"] == res.mde
    if tl is not None and not tl.tells:
        assert "the scan cannot tell a slow core from a state of the moment" in text
    assert (data["timeline"] or {}).get("tells") == (tl.tells if tl else None)


@pytest.mark.parametrize("model", ["quiet", "two-speed", "skewed", "loaded"])
def test_table_sentence_and_json_agree_on_simulated_scans(model):
    rng = random.Random(model)
    for _ in range(3):
        target = rng.randrange(16)
        kind = rng.choice(["null", "slow", "competitor", "burst"])
        kw = {"null": {}, "slow": {"slow": {target: rng.choice([1.03, 1.05, 1.2])}},
              "competitor": {"competitor": target}, "burst": {"burst": (target, 3, 0.3), "rounds": 12}}[kind]
        res = cores_check.campaign(rng.randrange(1 << 30), kw.pop("slow", {}), model=model, **kw)
        _agree(res)


@pytest.mark.parametrize("concurrent", [False, True])
def test_table_sentence_json_and_detectable_agree_on_a_guest_whose_vcpus_change_speed(concurrent):
    # Many outcomes on the vcpu-states guest: nulls, slow CPUs of several sizes (some below what the
    # scan detects), competitors for the whole scan and for its first third only.
    rng = random.Random(f"vcpu:{concurrent}")
    kinds = []
    for _ in range(8):
        target, kind = rng.randrange(16), rng.choice(["null", "slow", "competitor", "first_third"])
        kw = {"null": {}, "slow": {"slow": {target: rng.choice([1.02, 1.03, 1.05, 1.2])}},
              "competitor": {"competitor": target}, "first_third": {"first_third": target}}[kind]
        res = cores_check.timed_campaign(rng.randrange(1 << 30), concurrent=concurrent, **kw)
        _agree(res)
        kinds.append({r.verdict for r in res.cpus})
    assert any("slow" in k for k in kinds) and any("slow" not in k for k in kinds)


def test_every_verdict_kind_renders_consistently():
    # one scan with a slow CPU, an intermittent one, a disturbed one and a failing one
    rng = random.Random(2)

    def model(spec):
        cpu, rnd = spec.cpus[0], spec.params["round"]
        if cpu == 6:
            return RunResult(wall_ns=10**6, user_s=0, sys_s=0, maxrss_kb=1, minflt=0, majflt=0, nvcsw=0,
                             nivcsw=0, exit_code=3)
        x = 0.05 * rng.lognormvariate(0, 0.01) * (1.1 if cpu == 1 else 1.0)
        x *= 1.5 if cpu == 3 and rnd % 3 else 1.0
        return x * (1.4 if cpu == 5 and rnd in (4, 5) else 1.0)

    res = _study(CoresConfig(WL, rounds=15, min_rounds=15), model, n_cores=4)
    assert {r.cpu: r.verdict for r in res.cpus if r.verdict != "not significant"} == {
        1: "slow", 3: "intermittent", 5: "disturbed", 6: "failed"}
    _agree(res)
    assert "CPUs 6: every run failed" in res.verdict


# --- item 3: the smallest detectable slowdown is what the rule detects -----------------------------

def test_detectable_is_detected_90_percent_of_the_time_and_not_much_below():
    rng = np.random.default_rng(0)
    resid = rng.normal(0, 0.03, 2000)
    x = detectable(resid, 20, 16, 0.03, 0.05, 0.02, 0.9, seed=1)
    assert 0.02 < x < 0.2
    e = rng.normal(0, 0.03, (2000, 20))
    at = called_slow(math.log1p(x) + e, 0.03, 0.05 / 16, 0.02, 0.9).mean()
    below = called_slow(math.log1p(x * 0.7) + e, 0.03, 0.05 / 16, 0.02, 0.9).mean()
    assert at >= 0.85 and below < 0.9


def test_two_speed_noise_raises_the_detectable_slowdown():
    rng = np.random.default_rng(3)
    normal = rng.normal(0, 0.03, 3000)
    mixed = np.where(rng.random(3000) < 0.3, 0.39, 0.0) + rng.normal(0, 0.03, 3000)
    mixed -= np.median(mixed)
    assert detectable(mixed, 30, 16, 0.03, 0.05, 0.02, 0.9) > 1.5 * detectable(normal, 30, 16, 0.03, 0.05, 0.02, 0.9)


def test_on_a_two_speed_machine_a_printed_detectable_slowdown_is_found():
    # Seen: "2.4 % detectable" printed on a two-speed VM while a 5 % slow CPU was found in 15 of 40.
    # Whenever a scan says a 5 % slowdown was detectable, it must have found the planted one.
    rng = random.Random(4)
    claims = misses = 0
    for _ in range(6):
        target = rng.randrange(16)
        res = cores_check.campaign(rng.randrange(1 << 30), {target: 1.05}, model="two-speed")
        if res.mde is not None and res.mde <= 0.05:
            claims += 1
            misses += res.cpus[target].verdict != "slow"
        assert res.mde is not None and (res.mde != math.inf or res.mde_why)
    assert misses == 0, (claims, misses)


def test_no_number_says_why():
    res = _study(CoresConfig(WL, rounds=3, min_rounds=3), lambda spec: 0.05 * random.uniform(0.99, 1.01), 4)
    assert res.mde == math.inf and "too few rounds (3)" in res.mde_why
    assert "smallest detectable slowdown: none, too few rounds (3)" in _text(res)
    assert "cannot tell whether a CPU is persistently slower: too few rounds (3)" in res.verdict


# --- item 5: the workload's primary metric in its own direction -------------------------------------

def _rate_model(slow: float, sd: float = 0.01, seed: int = 1):
    rng = random.Random(seed)

    def model(spec):
        rate = 200.0 / (slow if spec.cpus[0] == 1 else 1.0) * rng.lognormvariate(0, sd)
        return RunResult(wall_ns=10**8, user_s=0.1, sys_s=0, maxrss_kb=1, minflt=0, majflt=0, nvcsw=0,
                         nivcsw=0, exit_code=0, metrics={"events_per_s": rate})

    return model


def test_a_higher_is_better_metric_is_shown_as_itself_and_a_slow_cpu_as_lower():
    wl = Workload("mock", ("work",), primary_metric="events_per_s", unit="events/s")
    res = _study(CoresConfig(wl, rounds=12, min_rounds=12), _rate_model(1.25), 2)
    row = res.cpus[1]
    assert row.verdict == "slow" and 155 < row.median < 165 and row.ci.low < row.median < row.ci.high
    assert row.change == pytest.approx(1 / row.ratio - 1) and -0.22 < row.change < -0.18
    assert row.change_ci.low < row.change < row.change_ci.high < 0
    text = _text(res)
    assert "median events_per_s per CPU [events/s], higher is better" in text
    assert "median events/s" in text and "1/events" not in text and "s per event" not in text
    assert f"{row.change:+.1%}" in text and "slow core 1 (CPUs 1): events_per_s -" in res.verdict


def test_a_change_whose_ci_spans_zero_is_not_a_finding():
    wl = Workload("mock", ("work",), primary_metric="events_per_s")
    res = _study(CoresConfig(wl, rounds=8, min_rounds=8), _rate_model(1.0, sd=0.2, seed=7), 1)
    for r in res.cpus:
        if r.change_ci.low < 0 < r.change_ci.high:
            assert r.verdict in ("not significant", "disturbed")
            # the change and its CI in one form, both percentages
            assert f"{r.change:+.1%}" in _text(res) and f"{r.change_ci.low:+.1%}..{r.change_ci.high:+.1%}" in _text(res)


def test_a_scan_on_sorted_rounds_calls_what_it_calls_on_them_unsorted():
    # detectable() sorts each simulated scan's rounds once and reads the medians off: the calls
    # (and the levels they rest on) must be those of the rounds in their drawn order
    rng = np.random.default_rng(11)
    for n in (7, 8):
        shift = rng.choice([0.0, math.log1p(0.03), math.log1p(0.06)], (400, 1))
        v = shift + rng.normal(0, 0.01, (400, n)) * rng.choice([1.0, 4.0], (400, n))
        both = (called_slow(v, 0.01, 0.05, 0.02, 0.5),
                called_slow(np.sort(v, axis=1), 0.01, 0.05, 0.02, 0.5, rows_sorted=True))
        assert np.array_equal(*both) and 0 < both[0].sum() < 400
