"""perflab variants: budget options without --until-decided refused in one line and exit status 2."""

from __future__ import annotations

from perflab.cli import main


def test_budget_options_without_until_decided_are_one_line_exit_2(capsys):
    for args in (["--max-runs", "40"], ["--until-decided", "--rounds", "30"],
                 ["--until-decided", "--min-effect", "200%"]):
        try:
            main(["variants", "--link-order-demo", *args])
        except SystemExit as exc:
            assert exc.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("perflab: error: "), err
