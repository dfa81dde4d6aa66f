"""perflab cores --until-decided: option combinations it refuses, in one line and exit status 2."""

from __future__ import annotations

import pytest

from perflab.cli import main


def test_bad_option_combinations_exit_2_with_one_line(capsys):
    for args in (["--max-runs", "60"], ["--until-decided", "--blocks", "1"],
                 ["--until-decided", "--max-runs", "20"], ["--until-decided", "--precision", "0.01"],
                 ["--until-decided", "--min-rounds", "4"]):
        with pytest.raises(SystemExit) as exc:
            main(["cores", "--cpus", "0,1", *args, "--", "true"])
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("perflab: error: "), err
