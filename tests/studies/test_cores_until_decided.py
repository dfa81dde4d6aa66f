"""`perflab cores --until-decided`: blocks until every CPU is decided at --min-effect, or the
budget ends (studies/cores/looks.py). The study's own blocks and stop rule (study.execute) run
through the MockExecutor, on the harness's simulated 16-CPU machine, for the decided, ruled-out
and budget-exhausted cases."""

from __future__ import annotations

import io
import math
import json

import pytest
from rich.console import Console

from perflab.checks import cores as cc
from perflab.errors import PerflabError
from perflab.measure.executor import MockExecutor
from perflab.model import Workload
from perflab.platform.machine import Machine
from perflab.report.answers import _evidence, basis
from perflab.report.terminal.cores import render
from perflab.studies.cores import looks
from perflab.studies.cores import study as cores
from perflab.store import open_store
from perflab.studies import run_study
from perflab.studies.cores.result import CoresResult, level_text


def _decisions(r):
    return {int(c): v["decision"] for c, v in r.sequential["cpus"].items()}


def test_planted_slow_cpu_is_decided_and_named_before_the_budget():
    r = cc.until_decided_campaign("quiet", {5: 1.05}, seed=3)
    q = r.sequential
    assert q["decided"] and r.stopped == "decided" and q["looks"][-1]["runs"] < q["budget"]
    assert cc.named(r) == {5: "slow"} and [s.cpus for s in r.slow] == [(5,)]
    d = _decisions(r)
    assert d[5] == looks.SLOW and all(v == looks.RULED_OUT for c, v in d.items() if c != 5)
    # its interval is the repeated one of the last look, at that look's level, and excludes 1
    row = next(x for x in r.cpus if x.cpu == 5)
    assert row.ratio_ci.low > 1 and row.ratio_ci.level == pytest.approx(min(q["looks"][-1]["level"], 1 - 1e-12))
    assert "slow core 5" in r.verdict and "repeated CI) vs the rest, its interval above no change" in r.verdict
    assert "no other CPU is slower than the rest by 2% or more" in r.verdict


def test_null_is_ruled_out_or_cannot_tell_never_slow():
    for model in ("quiet", "loaded", "skewed"):
        r = cc.until_decided_campaign(model, {}, seed=11)
        assert not r.slow and not any(x.verdict == "slow" for x in r.cpus), model
        assert set(_decisions(r).values()) <= {looks.RULED_OUT, ""}, model
        assert "no CPU is persistently slower" not in r.verdict, model
        if r.sequential["decided"]:
            assert r.verdict.startswith("no CPU is slower than the rest by 2% or more"), model
        else:
            assert "cannot tell whether CPU" in r.verdict, model
    quiet = cc.until_decided_campaign("quiet", {}, seed=11)
    assert quiet.sequential["decided"] and set(_decisions(quiet).values()) == {looks.RULED_OUT}


def test_budget_exhausted_says_what_would_decide_it():
    r = cc.until_decided_campaign("loaded", {}, seed=1, max_runs=30)
    q = r.sequential
    assert r.rounds == 30 and r.stopped == "budget" and q["final"] and not q["decided"]
    assert q["needs_blocks"] > 3 and q["needs_runs"] == 10 * q["needs_blocks"] and q["needs_s"] > 0
    assert "no CPU is slower" not in r.verdict and "no CPU is persistently slower" not in r.verdict
    assert "within the budget (3 blocks, 30 rounds)" in r.verdict
    assert f"about {q['needs_blocks']} blocks ({q['needs_runs']} rounds" in r.verdict
    assert f"--until-decided --max-runs {q['needs_runs']}" in r.verdict
    back = CoresResult.from_dict(json.loads(json.dumps(r.as_dict())))
    assert back.sequential == q and back.verdict == r.verdict
    out = io.StringIO()
    render(back, Console(file=out, width=400))
    text = out.getvalue()
    assert "measured until decided: look 1 at 3 blocks of at most 3" in text and "cannot tell whether CPU" in text
    assert "decided" in text and "ruled out" in text and "p Holm" not in text


def test_stored_runs_give_the_scans_last_look(monkeypatch):
    """study.analyse on the stored runs (what `perflab resume` and the report do) is the scan's own
    last look: the blocks stored, the budget from the first block's time."""
    stored = []
    run = cc._Bare.run

    def keep(self, spec, rep=0):
        res = run(self, spec, rep)
        stored.append((dict(spec.params), res))
        return res

    monkeypatch.setattr(cc._Bare, "run", keep)
    r = cc.until_decided_campaign("loaded", {2: 1.05}, seed=4, max_runs=50)
    config = cores.CoresConfig(Workload("sim", ("sim",)), seed=4, until_decided=True, max_runs=50)
    again = cores.analyse(config, stored, cc.smt_box(8))
    assert again.verdict == r.verdict and again.sequential == r.sequential


def test_default_scan_stores_no_sequential_key():
    r = cc.campaign(2, {}, rounds=6)
    assert r.sequential is None and "sequential" not in r.as_dict()


@pytest.mark.parametrize("fields, says", [
    (dict(max_runs=60), "--max-runs bounds --until-decided"),
    (dict(until_decided=True, blocks=1), "needs 2 or more"),
    (dict(until_decided=True, max_runs=20), "--max-runs 20 is below the first look's --rounds 30"),
])
def test_bad_config_is_one_error(fields, says):
    with pytest.raises(PerflabError, match=says):
        cores.CoresConfig(Workload("sim", ("sim",)), **fields)


def test_the_look_rules_to_exact_numbers():
    # median 0.05 of three block levels, SD 0.01, df 30: t(0.975, 30) = 2.0423, median_se(3) = sqrt(0.449)
    ratio, low, high = looks.interval([0.04, 0.05, 0.07], 0.01, 30.0, 0.95)
    half = 2.0422724563 * 0.01 * 0.449 ** 0.5
    assert (ratio, low, high) == pytest.approx((math.exp(0.05), math.exp(0.05 - half), math.exp(0.05 + half)))
    assert looks.interval([0.05], 0.01, 30.0, 0.95) is None
    assert looks.decision(1.05, 1.01, 1.09, 0.02) == looks.SLOW
    assert looks.decision(1.015, 1.001, 1.03, 0.02) == ""  # above 1, but under the minimum effect
    assert looks.decision(1.0, 0.99, 1.02, 0.02) == looks.RULED_OUT
    assert looks.decision(1.0, 0.97, 1.03, 0.02) == ""
    # ruled out once the top (0.03 above the log ratio 0 at 4 blocks) is under log 1.02: 4 (0.03 / log 1.02)^2
    assert looks.blocks_needed(4, 1.0, math.exp(-0.03), math.exp(0.03), 0.02) == math.ceil(4 * (0.03 / math.log(1.02)) ** 2)
    assert level_text(0.9787) == "97.87%" and level_text(0.99998) == "99.998%"


def test_concurrent_scan_looks_at_block_ends_too():
    r = cc.timed_campaign(7, "vcpu-states", concurrent=True, competitor=3, until_decided=True, max_runs=50)
    q = r.sequential
    assert r.mode == "concurrent" and r.rounds % 10 == 0 and q["looks"][0]["runs"] == 3
    assert r.stopped in ("decided", "budget") and not (set(cc.named(r)) - {3})


def test_report_answer_reads_the_decision_not_a_holm_p():
    # the report's answers read the result decoded from the stored summary, as the report does
    undecided = CoresResult.from_dict(cc.until_decided_campaign("loaded", {}, seed=1, max_runs=30).as_dict())
    assert _evidence("cores", undecided, {}) == "cannot tell within the budget (--until-decided)"
    assert basis("cores", undecided)[1]  # thin: the budget left CPUs undecided
    found = CoresResult.from_dict(cc.until_decided_campaign("quiet", {5: 1.05}, seed=3).as_dict())
    assert "decided by its repeated CI (--until-decided)" in _evidence("cores", found, {})
    assert not basis("cores", found)[1]


def test_resume_after_interrupt_repeats_nothing(tmp_path):
    """A scan killed mid-block resumes where it stopped: stored runs are not run again, and the
    looks and budget are the ones the stored runs set."""
    def model(seed):
        rng = cc.random.Random(seed)
        return lambda spec: 0.05 * (1.08 if spec.cpus[0] == 3 else 1.0) * rng.lognormvariate(0, 0.01)

    calls = {"n": 0}
    base = model(1)

    def dying(spec):
        calls["n"] += 1
        if calls["n"] == 40:
            raise KeyboardInterrupt
        return base(spec)

    cfg = cores.CoresConfig(Workload("mock", ("work",)), rounds=6, span=0, until_decided=True, max_runs=24)
    box = Machine(cc.smt_box(4), {"loadavg": [0.0]})
    with open_store(str(tmp_path / "perflab.db")) as store:
        with pytest.raises(KeyboardInterrupt):
            run_study(cores, cfg, store, MockExecutor(dying), machine=box)
        camp = store.campaigns()[-1]
        assert camp.status == "interrupted" and camp.n_measurements == 38  # the 39 calls before: warm-up + 38 runs
        ex = MockExecutor(model(2))
        res = run_study(cores, cores.CoresConfig.from_dict(store.campaign(camp.id).config), store, ex,
                        machine=box, resume=camp.id)
        keys = [(m.params["cpu"], m.params["round"]) for m in store.measurements(camp.id) if m.params["round"] >= 0]
        assert len(keys) == len(set(keys)) == 8 * res.rounds and len(ex.calls) == 8 * res.rounds - 38
        assert res.sequential is not None and res.stopped in ("decided", "budget")
        assert store.campaign(camp.id).status == "done"


def test_html_section_shows_the_repeated_interval_that_decided_not_a_holm_p():
    from types import SimpleNamespace

    from perflab.report.build import build_section

    r = cc.until_decided_campaign("quiet", {5: 1.05}, seed=3)
    camp = SimpleNamespace(id=1, study="cores", status="done", summary=r.as_dict(), labels={}, host_id=None, config={})
    (table,) = [t for t in build_section(camp, []).tables if t.title.startswith("Per CPU")]
    assert "p (Holm)" not in table.columns
    col = table.columns.index("decided (repeated CI)")
    cells = {row[0]: row[col] for row in table.rows}
    level = level_text(next(x for x in r.cpus if x.cpu == 5).ratio_ci.level)
    assert cells[5] == f"slow ({level} repeated CI)"
    assert all(v.startswith("ruled out (") for c, v in cells.items() if c != 5)
    assert f"{len(r.sequential['looks'])} looks, O'Brien-Fleming-type" in table.note
    fixed = cc.until_decided_campaign("quiet", {5: 1.05}, seed=3).as_dict()
    del fixed["sequential"]  # a scan without looks keeps its Holm p
    camp.summary = fixed
    (table,) = [t for t in build_section(camp, []).tables if t.title.startswith("Per CPU")]
    assert "p (Holm)" in table.columns and "repeated" not in table.note


def test_a_first_look_with_one_degree_of_freedom_has_no_upper_end_and_decides_nothing():
    # Two blocks of runs of `true` on a loaded machine: levels far apart, df 1, the first look's
    # 99.9 % level. The t quantile is in the hundreds: the interval has no upper end, undecided.
    from perflab.studies.cores import looks

    ratio, low, high = looks.interval([-1.22549972, 0.72789062], 1.3812555527859658, 1.0, 0.9991760421634068)
    assert high == float("inf") and 0 <= low < ratio < high
    assert looks.decision(ratio, low, high, 0.02) == ""
