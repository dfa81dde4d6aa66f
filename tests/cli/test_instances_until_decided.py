"""perflab instances --until-decided: input it refuses, in one line and exit status 2."""

from __future__ import annotations

import json

import pytest

from perflab.cli import main


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


def test_min_runs_below_a_testable_look_is_refused(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["instances", "--until-decided", "--min-runs", "3", "--", "true"])
    assert exc.value.code == 2
    assert "--min-runs 3: a look needs 4 rounds a point" in capsys.readouterr().err


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
