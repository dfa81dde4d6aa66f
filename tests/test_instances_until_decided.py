"""`perflab instances --until-decided`: rounds until every N past the CPU count is shown to gain
--min-effect over the best N at or below it, or shown not to, or the budget ends
(studies/instances/looks.py). The study's own execute runs through the MockExecutor on a 2-CPU
box (checks/instances_check.until_decided_campaign); a real scan of sleeping copies runs it end
to end."""

from __future__ import annotations

import json
import re

import pytest

from perflab.checks import instances_check as ic
from perflab.cli import main
from perflab.studies.instances.result import InstancesResult


def _past(r: InstancesResult):
    return [s for scan in r.scans for s in scan.steps if s.kind == "past"]


def test_planted_gain_past_the_cpus_is_decided_before_the_budget():
    r = ic.until_decided_campaign("quiet", ic.WAIT, seed=1)
    assert r.optimum_n == 3 and r.sequential["decided"] and r.reps < r.sequential["budget"]
    assert all(s.decision == "gain" and s.significant for s in _past(r))
    assert "repeated CI" in r.verdict() and re.search(r"decided at look \d+ \(\d+ rounds", r.verdict())


def test_flat_machine_rules_out_a_gain_or_cannot_tell_never_claims_one():
    runs = {model: ic.until_decided_campaign(model, 0.0, seed=1) for model in ("quiet", "loaded")}
    for r in runs.values():
        assert r.optimum_n == 2 and not any(s.significant for s in _past(r))
        assert all(s.decision in ("no gain", "") for s in _past(r))
    quiet = runs["quiet"]
    assert all(s.decision == "no gain" for s in _past(quiet))
    assert "no N past the 2 CPUs gains over N = 2 by the minimum effect or more" in quiet.verdict()


def test_budget_exhausted_reads_cannot_tell_with_the_rounds_that_would_decide():
    r = ic.until_decided_campaign("loaded", ic.WAIT, seed=3, max_runs=6)
    q = r.sequential
    assert r.reps == 6 and q["final"] and not q["decided"] and r.rounds_needed == q["needs_runs"] > 6
    assert f"about {q['needs_runs']} rounds would decide it" in r.verdict()
    assert f"--until-decided --max-runs {q['needs_runs']}" in r.verdict()
    assert any(not s.decision for s in _past(r)) and "cannot tell" in r.verdict()
    back = InstancesResult.from_dict(json.loads(json.dumps(r.as_dict())))
    assert back.sequential == q and back.verdict() == r.verdict()


@pytest.mark.parametrize("args, msg", [
    (["--max-runs", "8"], "--max-runs bound --until-decided"),
    (["--until-decided", "--reps", "9"], "--until-decided chooses the rounds itself"),
    (["--until-decided", "--min-runs", "9", "--max-runs", "6"], "--max-runs 6 is below --min-runs 9"),
    (["--until-decided", "--min-effect", "5 %%"], "--min-effect '5 %%' is not a number"),
])
def test_bad_until_decided_input_is_one_line_exit_2(args, msg, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["instances", *args, "--", "true"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and msg in err[0], err


@pytest.mark.serial  # real copies timed
def test_cli_real_sleeping_copies_until_decided(tmp_path, capsys):
    out = tmp_path / "inst.json"
    main(["instances", "--n", "2,3", "--policy", "compact", "--until-decided", "--min-runs", "4",
          "--max-runs", "6", "--db", str(tmp_path / "p.db"), "--json", str(out), "--", "sleep", "0.05"])
    data = json.loads(out.read_text())["result"]
    assert data["sequential"] and data["reps"] <= 6 and data["min_effect"] == 0.05
    # three sleeping copies overlap on the 2 CPUs: a gain past them, shown or not yet decided
    (step,) = [s for s in data["scans"][0]["steps"] if s["kind"] == "past"]
    assert step["decision"] in ("gain", "") and step["ratio"] > 1.2
    text = " ".join(capsys.readouterr().out.split())
    assert "measured until decided" in text and "no N past" not in text


def test_min_runs_below_a_testable_look_is_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["instances", "--until-decided", "--min-runs", "3", "--", "true"])
    assert exc.value.code == 2
    assert "--min-runs 3: a look needs 4 rounds a point" in capsys.readouterr().err


def test_no_n_past_the_cpus_stops_at_the_first_look_and_says_there_was_nothing_to_decide():
    r = ic.optimum_campaign("quiet", 0.0, 1, salt=41, until_decided=True, ns=(1, 2))
    q = r.sequential
    assert r.reps == 5 and len(q["looks"]) == 1 and q["looks"][0]["runs"] == 5 and not q["final"]
    assert not _past(r) and r.optimum_n == 2 and r.rounds_needed is None
    assert "no N past the CPU count to decide" in r.verdict() and "first look (5 rounds)" in r.verdict()
    assert "gain of 5% or more shown or ruled out" not in r.verdict() and "cannot tell" not in r.verdict()
    assert any("this scan has none (--n up to 2): it stops at its first look" in n for n in r.notes)


def test_cli_no_n_past_the_cpus_answers_with_exit_0(tmp_path, capsys):
    import os

    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 usable CPUs for --n 1,2 to stay at or below the CPU count")
    out = tmp_path / "inst.json"
    main(["instances", "--n", "1,2", "--policy", "none", "--until-decided", "--db", str(tmp_path / "p.db"),
          "--json", str(out), "--", "true"])  # returns: exit status 0
    data = json.loads(out.read_text())["result"]
    assert data["reps"] == 5 and data["optimum_n"] in (1, 2) and data["rounds_needed"] is None
    assert "no N past the CPU count to decide" in " ".join(capsys.readouterr().out.split())
