"""`perflab variants --until-decided`: rounds until each build is decided at --min-effect, or the
budget ends (studies/variants/looks.py). The study's own rounds and stop rule (study.measure) run
through the MockExecutor for the decided, ruled-out and budget-exhausted cases; the link-order
demo runs it end to end with real builds in tests/real/test_variants_until_decided.py."""

from __future__ import annotations

import io
import json

from rich.console import Console

from perflab.checks import variants as vc
from perflab.checks.noise import STUDY_MODELS
from perflab.report.terminal.variants import render
from perflab.studies.variants.result import VariantsResult


def _primary(result):
    return {o.name: o.comparisons[result.primary] for o in result.variants if result.primary in o.comparisons}


def test_planted_faster_build_is_decided_and_named_before_the_budget():
    r = vc.until_decided(STUDY_MODELS["quiet"], {"lto": vc.PLANTED}, seed=3)
    comps = _primary(r)
    assert r.fastest == "lto" and comps["lto"].decision == "larger" and comps["lto"].significant
    assert r.sequential["decided"] and r.rounds < r.sequential["budget"]
    # the other builds are ruled out at the margin, never called
    assert all(comps[n].decision == "within" and not comps[n].significant for n in ("O3", "native"))
    assert "every build decided at look" in r.verdict and "no significant difference" not in r.verdict


def test_equal_builds_are_ruled_out_or_cannot_tell_never_called():
    runs = {model: vc.until_decided(STUDY_MODELS[model], {}, seed=5) for model in ("quiet", "loaded")}
    for r in runs.values():
        comps = _primary(r)
        assert not any(c.significant for c in comps.values()) and r.fastest is None
        assert all(c.decision in ("within", "") for c in comps.values())
        assert "no significant difference" not in r.verdict
    quiet = runs["quiet"]
    assert all(c.decision == "within" for c in _primary(quiet).values())
    assert "no change of 2% or more against base" in quiet.verdict


def test_budget_exhausted_reads_cannot_tell_with_the_rounds_that_would_decide():
    r = vc.until_decided(STUDY_MODELS["loaded"], {}, seed=1, max_runs=20)
    q = r.sequential
    assert r.rounds == 20 and q["final"] and not q["decided"]
    assert q["needs_runs"] > 20 and q["needs_s"] > 0
    assert "cannot tell whether faster or slower than base by 2%" in r.verdict
    assert f"about {q['needs_runs']} rounds would decide it" in r.verdict
    assert f"--until-decided --max-runs {q['needs_runs']}" in r.verdict
    back = VariantsResult.from_dict(json.loads(json.dumps(r.as_dict())))
    assert back.sequential == q and _primary(back)["O3"].decision == _primary(r)["O3"].decision
    out = io.StringIO()
    render(back, Console(file=out, width=400))
    text = out.getvalue()
    assert "? = cannot tell" in text and "cannot tell within the budget (20 rounds)" in text
