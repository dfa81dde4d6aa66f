"""perflab instances --until-decided: input it refuses, in one line and exit status 2."""

from __future__ import annotations

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
