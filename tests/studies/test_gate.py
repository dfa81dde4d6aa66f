"""The regression gate on stored campaigns: thresholds, baselines in SQLite, the JUnit schema, the
false-failure rate on null pairs, a missing measure, energy gated."""

from __future__ import annotations

import random

import pytest

from perflab.checks.gate import SimConfig, simulate
from perflab.errors import PerflabError
from perflab.store import open_store
from perflab.studies.gate.study import GateConfig, check_measures, evaluate, parse_threshold
from tests.real.test_gate import XSD, _baselines_roundtrip, _result


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
