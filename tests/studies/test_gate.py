"""The regression gate on stored campaigns: thresholds, baselines in SQLite, the JUnit schema, the
false-failure rate on null pairs, a missing measure, energy gated."""

from __future__ import annotations

import json
import random

import pytest

from perflab.checks import gate as gc
from perflab.checks.gate import SimConfig, simulate
from perflab.errors import PerflabError
from perflab.store import open_store
from perflab.studies.gate.study import GateConfig, check_measures, evaluate, parse_threshold
from tests.helpers import XSD, _baselines_roundtrip, _result


def test_thresholds_parse_relative_and_absolute():
    t = parse_threshold("median>+3%")
    assert (t.measure(None), t.op, t.value, t.relative) == ("wall_s", ">", 0.03, True)
    assert parse_threshold("median>+2ms").value == pytest.approx(0.002)
    assert parse_threshold("rss>+10MiB").value == pytest.approx(10240)
    assert parse_threshold("events_per_s<-2%").measure(None) == "metric:events_per_s"
    assert parse_threshold("primary<-5").measure("events_per_s") == "metric:events_per_s"
    assert parse_threshold("energy>+1.5J").value == pytest.approx(1.5)
    for bad in ("median>3", "median", "median>+3", "median>=+3%", "rss>+3s", "events_per_s>+3ms"):
        with pytest.raises(PerflabError):
            parse_threshold(bad)


def test_baselines_in_sqlite(tmp_path):
    with open_store(str(tmp_path / "perflab.db")) as store:
        _baselines_roundtrip(store)


def test_junit_schema_rejects_what_gitlab_would_not_read(tmp_path):
    import xmlschema

    schema = xmlschema.XMLSchema(str(XSD))
    bad = tmp_path / "bad.xml"
    bad.write_text('<testsuites><testsuite name="s" tests="1" failures="0" errors="0">'
                   '<testcase name="x"/></testsuite></testsuites>')  # no classname
    assert not schema.is_valid(str(bad))
    bad.write_text('<testsuites><testsuite name="s" tests="1" failures="1" errors="0">'
                   '<testcase classname="c" name="x"><fail/></testcase></testsuite></testsuites>')
    assert not schema.is_valid(str(bad))


def test_gate_false_failure_rate_on_null_pairs_is_low():
    res = simulate(SimConfig(pairs=25))
    assert res.false_positive <= 0.05 and res.detection >= 0.9


def test_a_gated_measure_missing_from_the_campaign_is_an_error_not_a_pass(tmp_path):
    with open_store(str(tmp_path / "perflab.db")) as store:
        a = store.start_campaign("run", {"primary_metric": "events_per_s"})
        b = store.start_campaign("run", {"primary_metric": "events_per_s"})
        for i in range(6):
            r = _result(1.0 + 0.01 * i)
            r.metrics = {"events_per_s": 100.0 - i}
            store.add_measurement(a, r, {}, rep=i, label="work")
            store.add_measurement(b, _result(1.0 + 0.01 * i), {}, rep=i, label="work")
        store.finish_campaign(a, "done")
        store.finish_campaign(b, "done")
        store.set_baseline("main", a)
        ok = evaluate(GateConfig("main", b, (parse_threshold("median>+3%"),)), store)
        assert not ok.failed and "baseline' was measured on an unrecorded machine" not in " ".join(ok.warnings)
        assert any("cannot check they are the same machine" in w for w in ok.warnings)
        with pytest.raises(PerflabError, match="campaign 2 has no successful run with 'primary'"):
            evaluate(GateConfig("main", b, (parse_threshold("primary<-3%"),)), store)


def _energy_campaigns(store, seed: int, sides: list[tuple[float, int | None]]) -> list[int]:
    """One 12-run 'run' campaign per (joules per run, events per run or None), 1 % noise each;
    the first is saved as baseline 'main'."""
    rng = random.Random(seed)
    cids = []
    for joules, events in sides:
        cid = store.start_campaign("run", {})
        for i in range(12):
            r = _result(1.0 * rng.lognormvariate(0, 0.01))
            r.energy = {"rapl:package-0": joules * rng.lognormvariate(0, 0.01)}
            if events is not None:
                r.metrics = {"events": events}
            store.add_measurement(cid, r, {}, rep=i, label="work")
        store.finish_campaign(cid, "done")
        cids.append(cid)
    store.set_baseline("main", cids[0])
    return cids


def test_energy_is_compared_where_recorded_and_can_be_gated(tmp_path):
    with open_store(str(tmp_path / "perflab.db")) as store:
        # B costs 20 % more energy per run at the same speed
        cids = _energy_campaigns(store, 3, [(10.0, None), (12.0, None)])
        res = evaluate(GateConfig("main", cids[1], (parse_threshold("energy>+10%"),
                                                    parse_threshold("median>+10%"))), store)
        by = {ln.row.measure: ln for ln in res.lines}
        assert by["energy_j"].failed and 1.15 < by["energy_j"].row.ratio < 1.25
        assert not by["wall_s"].failed and res.failed


def test_energy_per_event_can_be_gated(tmp_path):
    # B does 25 % more events for 20 % more joules: cheaper per event, dearer per run.
    with open_store(str(tmp_path / "perflab.db")) as store:
        cids = _energy_campaigns(store, 4, [(10.0, 100), (12.0, 125)])
        res = evaluate(GateConfig("main", cids[1], (parse_threshold("energy_per_event>+2%"),
                                                    parse_threshold("jpe<-50%"))), store)
        by = {ln.row.measure: ln for ln in res.lines}
        row = by["energy_per_event_j"].row
        assert 0.92 < row.ratio < 0.99 and not res.failed  # -4 %: neither threshold crossed
    # A measure the baseline lacks is refused, and the refusal offers the energy measures it has.
    with pytest.raises(PerflabError, match="energy, energy_per_event"):
        check_measures((parse_threshold("events_per_s>+2%"),), {"wall_s", "energy_j", "energy_per_event_j"}, None)


def test_until_decided_decision_rule_and_runs_needed_against_a_fixed_baseline():
    from perflab.studies.run import gated

    assert gated.decision(1.10, 1.02, 1.20, ">", 0.05) == gated.FAILS
    assert gated.decision(1.04, 1.01, 1.08, ">", 0.05) == ""  # a change shown, but not beyond +5 %
    assert gated.decision(1.00, 0.97, 1.04, ">", 0.05) == gated.RULED_OUT
    assert gated.decision(0.80, 0.70, 0.90, ">", 0.05) == gated.RULED_OUT  # an improvement passes
    assert gated.decision(1.00, 0.90, 1.10, ">", 0.05) == ""
    assert gated.decision(0.90, 0.85, 0.98, "<", -0.05) == gated.FAILS
    assert gated.decision(1.00, 0.96, 1.05, "<", -0.05) == gated.RULED_OUT
    # ratio 1, interval [0.9, 1/0.9] at 10 runs: the top must come from log(1/0.9) to log(1.05),
    # a share (log 1.05 / log(1/0.9))^2 = 0.2144 of today's variance 1/10 + 1/m
    assert gated.runs_needed(10, 10 ** 9, 1.0, 0.9, 1 / 0.9, ">", 0.05) == 47
    assert gated.runs_needed(10, 100, 1.0, 0.9, 1 / 0.9, ">", 0.05) == 74  # 1/n = 0.2144 x 0.11 - 0.01
    assert gated.runs_needed(10, 20, 1.0, 0.9, 1 / 0.9, ">", 0.05) is None  # the baseline's 20 runs are too few


def test_until_decided_harness_finds_the_planted_regression_and_passes_the_null():
    quiet_null = gc.until_decided_trial("quiet", 0.0, 1)
    quiet_planted = gc.until_decided_trial("quiet", 0.10, 1)
    assert quiet_null.exit_status == 0 and quiet_null.sequential["decided"] and quiet_null.runs < 300
    assert quiet_planted.exit_status == 1 and quiet_planted.sequential["failed"]
    (c,) = quiet_planted.sequential["comparisons"]
    assert c["decision"] == "fails" and c["low"] > 1 and c["n_a"] == gc.UNTIL_BASELINE_RUNS
    # a change of 3 % against a 5 % threshold, a budget of 10 runs: UNSURE, with the runs that would tell
    cut = gc.until_decided_trial("loaded", 0.03, 1, max_runs=10)
    q = cut.sequential
    assert cut.exit_status == 3 and q["final"] and not q["decided"] and cut.runs == 10
    assert q["needs_runs"] > 10 and q["needs_s"] > 0 and not q.get("baseline_too_few")


def test_a_run_config_with_a_gate_survives_its_stored_form():
    from perflab.studies.run import gated
    from perflab.studies.run.study import Command, RunConfig

    gate = gated.Gated("main", 3, (gated.Against("work", "work", "wall_s", "median>+5%", ">", 0.05, (0.1, 0.11)),),
                       history=True)
    cfg = RunConfig(commands=(Command("work", ("sleep", "0.1")),), until_decided=True, gate=gate)
    assert RunConfig.from_dict(json.loads(json.dumps(cfg.as_dict()))) == cfg
    assert gate.alpha_each == pytest.approx(0.025)


def test_until_decided_with_a_history_that_measures_drift_stops_at_the_first_look():
    # four saves of the baseline: the gate takes the campaign as the unit (its drift test), which
    # more runs of the candidate do not narrow, so the looks stop at the first one and the fixed
    # rules judge the line
    from perflab.studies.run.result import gate_line

    null, planted = (gc.until_decided_trial("quiet", p, 1, saves=4) for p in (0.0, 0.10))
    for t in (null, planted):
        (c,) = t.sequential["comparisons"]
        assert t.runs == 10 and c["campaign"] and c["decision"] == "" and t.sequential["decided"]
        assert "the baseline's saves measure the drift between campaigns" in gate_line(t.sequential)
    assert null.exit_status == 0 and planted.exit_status == 1


def test_a_campaign_measured_until_decided_keeps_its_looks_only_for_the_thresholds_they_decided():
    from perflab.measure.executor import MockExecutor
    from perflab.studies import run_study
    from perflab.studies.gate.looks import against
    from perflab.studies.run import study as run

    rng = random.Random(5)
    command = run.Command("work", ("work",))
    with open_store(":memory:") as store:
        base = run_study(run, run.RunConfig(commands=(command,), runs=30), store,
                         MockExecutor(lambda spec: 0.5 * rng.lognormvariate(0, 0.01)), machine=gc.UNTIL_MACHINE)
        store.set_baseline("main", base.campaign_id)
        five = (parse_threshold("median>+5%"),)
        cfg = run.RunConfig(commands=(command,), until_decided=True,
                            gate=against(store, "main", five, [("work", {})], None, 0.05))
        cand = run_study(run, cfg, store, MockExecutor(lambda spec: 0.5 * rng.lognormvariate(0, 0.01)),
                         machine=gc.UNTIL_MACHINE)
        assert cand.sequential["decided"] and cand.benchmarks[0].n == 10
        looked = evaluate(GateConfig("main", cand.campaign_id, five), store)
        (line,) = [ln for ln in looked.lines if ln.thresholds]
        assert line.repeated and line.status == "pass" and "no change beyond median>+5%" in line.verdict
        assert looked.sequential is not None and looked.exit_status == 0
        # another threshold than the looks decided: the fixed rules judge it, on the same runs
        other = evaluate(GateConfig("main", cand.campaign_id, (parse_threshold("median>+3%"),)), store)
        (line,) = [ln for ln in other.lines if ln.thresholds]
        assert not line.repeated and other.sequential is None and "Holm" in line.text(other.family)


def test_looks_within_two_speeds_print_the_ratio_their_interval_is_about():
    # The baseline mostly at a fast speed, two of its runs at a slow one; the candidate wholly at
    # the slow speed, 16 % above it: the looks compare within the slow speed (B/A about 1.16),
    # where the pooled medians' ratio (about 1.94) lies outside their interval. The line prints
    # the estimate its interval is about, alike in the terminal, the Markdown and the JSON.
    from perflab.measure.executor import MockExecutor
    from perflab.report.gate import to_markdown
    from perflab.studies import run_study
    from perflab.studies.gate.looks import against
    from perflab.studies.run import study as run

    rng = random.Random(7)
    command = run.Command("work", ("work",))
    base_walls = iter([0.0359 if i in (3, 8) else 0.0214 for i in range(12)])
    with open_store(":memory:") as store:
        base = run_study(run, run.RunConfig(commands=(command,), runs=12), store,
                         MockExecutor(lambda spec: next(base_walls) * rng.lognormvariate(0, 0.01)),
                         machine=gc.UNTIL_MACHINE)
        store.set_baseline("main", base.campaign_id)
        gate = (parse_threshold("median>+20%"),)
        cfg = run.RunConfig(commands=(command,), until_decided=True, max_runs=40,
                            gate=against(store, "main", gate, [("work", {})], None, 0.05))
        cand = run_study(run, cfg, store, MockExecutor(lambda spec: 0.0416 * rng.lognormvariate(0, 0.01)),
                         machine=gc.UNTIL_MACHINE)
        looked = evaluate(GateConfig("main", cand.campaign_id, gate), store)
    (line,) = [ln for ln in looked.lines if ln.thresholds]
    assert line.repeated
    lo, hi, _ = line.interval()
    a, b, what, ratio = line.shown()
    assert b / a > 1.8 and what == "pooled median", (a, b, what)  # the pooled figures, named
    assert lo <= ratio <= hi and ratio < 1.4, (ratio, lo, hi)  # the estimate lies in its interval
    text = line.text(looked.family)
    assert f"B/A {ratio:.4f} [{lo:.4f}, {hi:.4f}]" in text and f"{100 * (ratio - 1):+.1f} % within speeds" in text
    assert f"| {ratio:.4f} [{lo:.4f}, {hi:.4f}]" in to_markdown(looked)
    assert f"| {100 * (ratio - 1):+.1f} % within speeds |" in to_markdown(looked)
    d = line.as_dict()
    assert d["ratio"] == ratio and d["compared"] == "pooled median" and d["pooled"]["ratio"] > 1.8
    assert d["within_speeds"] is True
    # a line compared on its own figures carries no such mark, in any output
    plain = [ln for ln in looked.lines if not ln.within_speeds]
    assert all("within speeds" not in ln.text(looked.family) and "within_speeds" not in ln.as_dict()
               for ln in plain)
