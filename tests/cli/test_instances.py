"""perflab instances --plan on a machine's snapshot, and its bad input: one line, exit status 2."""

from __future__ import annotations

import pytest


def test_cli_plan_on_a_snapshot_and_bad_input(topology_root, capsys):
    from perflab.cli import main

    root = topology_root("48amd64-4pa2n6c-sparse").path
    main(["instances", "--plan", "--root", root, "--n", "8", "--policy", "numa"])
    out = capsys.readouterr().out
    assert "NUMA nodes 0, 1, 2, 33, 34, 45, 72, 73" in out
    assert "5:30-35[m45]" in out and "7:42-47[m73]" in out
    main(["instances", "--plan", "--root", root, "--n", "2", "--policy", "numa", "--threads-per-copy", "3"])
    assert "0:0-2[m0]" in capsys.readouterr().out
    for argv, msg in ((["--root", root, "--", "true"], "--root only applies to --plan"),
                      (["--threads-per-copy", "64", "--", "true"], "larger than a NUMA node"),
                      (["--threads-per-copy", "0", "--", "true"], "out of range"),
                      (["--reps", "0", "--", "true"], "out of range"),
                      (["--max", "0", "--", "true"], "out of range"),
                      (["--n", "1-999999999", "--", "true"], "beyond any machine"),
                      (["--n", "0,2", "--", "true"], "give counts from 1"),
                      (["--timeout", "nan", "--", "true"], "not a duration"),
                      (["--fork-master", "--", "true"], "no fork argument"),
                      (["--n", "2", "--max", "3", "--", "true"], "not both")):
        with pytest.raises(SystemExit) as exc:
            main(["instances", *argv])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert msg in err and len(err.strip().splitlines()) == 1
