"""`perflab variants --until-decided`: rounds until each build is decided at --min-effect, or the
budget ends (studies/variants/looks.py). The study's own rounds and stop rule (study.measure) run
through the MockExecutor for the decided, ruled-out and budget-exhausted cases; the link-order
demo runs it end to end with real builds."""

from __future__ import annotations

import io
import json
import re

from rich.console import Console

from perflab.checks import variants as vc
from perflab.checks.noise import STUDY_MODELS
from perflab.cli import main
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


def test_budget_options_without_until_decided_are_one_line_exit_2(capsys):
    for args in (["--max-runs", "40"], ["--until-decided", "--rounds", "30"],
                 ["--until-decided", "--min-effect", "200%"]):
        try:
            main(["variants", "--link-order-demo", *args])
        except SystemExit as exc:
            assert exc.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("perflab: error: "), err


def test_link_order_demo_until_decided_end_to_end(tmp_path, capsys, monkeypatch):
    """Real builds and runs: glibc's sin is about 1.5x slower than the archive's polynomial, a
    change the design decides at an early look, well inside the budget."""
    monkeypatch.setenv("PERFLAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "400")
    out = tmp_path / "v.json"
    main(["variants", "--link-order-demo", "--until-decided", "--min-runs", "4", "--max-runs", "16",
          "--db", str(tmp_path / "v.db"), "--json", str(out)])
    text = " ".join(capsys.readouterr().out.split())
    data = json.loads(out.read_text())["result"]
    bad = {r["name"]: r for r in data["variants"]}["archive-first"]["comparisons"]["wall_s"]
    assert bad["sequential"] and bad["ratio"] > 1.0
    assert bad["decision"] == "larger" or not data["sequential"]["decided"]
    assert data["rounds"] <= 16 and "measured until decided" in text
    assert re.search(r"archive-first: elapsed \+\d", text) and "no significant difference" not in text
