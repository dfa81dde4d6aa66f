"""`perflab instances --until-decided`: rounds until every N past the CPU count is shown to gain
--min-effect over the best N at or below it, or shown not to, or the budget ends
(studies/instances/looks.py). The study's own execute runs through the MockExecutor on a 2-CPU
box (checks/instances.until_decided_campaign); a real scan of sleeping copies runs it end
to end in tests/real/test_instances_until_decided.py."""

from __future__ import annotations

import json
import re


from perflab.checks import instances as ic
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


def test_no_n_past_the_cpus_stops_at_the_first_look_and_says_there_was_nothing_to_decide():
    r = ic.optimum_campaign("quiet", 0.0, 1, salt=41, until_decided=True, ns=(1, 2))
    q = r.sequential
    assert r.reps == 5 and len(q["looks"]) == 1 and q["looks"][0]["runs"] == 5 and not q["final"]
    assert not _past(r) and r.optimum_n == 2 and r.rounds_needed is None
    assert "no N past the CPU count to decide" in r.verdict() and "first look (5 rounds)" in r.verdict()
    assert "gain of 5% or more shown or ruled out" not in r.verdict() and "cannot tell" not in r.verdict()
    assert any("this scan has none (--n up to 2): it stops at its first look" in n for n in r.notes)


def test_a_look_within_two_speeds_says_so_beside_its_ratio():
    # Rounds measured beside heavy load: N = 2 at one level, N = 3 at two (its own, and one other
    # load pulled down to N = 2's). The looks compare like with like, within the speeds: their ratio
    # (about x1.01) lies far from the medians' (x1.40), so the answer names it as within speeds,
    # and the JSON carries the same flag.
    from perflab.studies.instances import looks
    from perflab.studies.instances.optimum import Step, choose

    samples = {2: [37.69, 38.27, 38.45, 38.46, 38.56, 38.19], 3: [57.33, 35.84, 57.01, 57.13, 41.62, 50.53]}
    decided = looks.decide_past(samples, [(3, 2)], 0.929, 0.05)
    assert decided[3][3] and decided[3][1] < 1.2  # compared within two speeds
    choice = choose(samples, 2, decided=decided)
    (step,) = [s for s in choice.steps if s.kind == "past"]
    assert step.within and "within speeds" in choice.reason, choice.reason
    assert Step.from_dict(step.as_dict()) == step
    plain = choose({2: samples[2], 3: [57.3, 57.1, 57.0, 56.9, 57.2, 57.4]}, 2,
                   decided=looks.decide_past({2: samples[2], 3: [57.3, 57.1, 57.0, 56.9, 57.2, 57.4]},
                                             [(3, 2)], 0.929, 0.05))
    assert "within speeds" not in plain.reason  # one speed a side: the plain ratio, said plainly
