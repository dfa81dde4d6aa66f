"""`perflab profile` on the command line: bad input in one line, exit status 2."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("args,msg", [
    (["--freq", "nan", "--", "true"], "Invalid value for '--freq' / '-F': 'nan' is not a whole number"),
    (["--repeat", "0", "--", "true"], "Invalid value for '--repeat': '0' is out of range"),
    (["--duration", "-1", "--", "true"], "Invalid value for '--duration': '-1' is out of range"),
    (["--threshold", "nan", "--", "true"], "--threshold nan: give a percentage from 0 to 100"),
    (["--after", "inf", "--", "true"], "--after inf: give a finite number of seconds >= 0"),
    (["--children", "--", "true"], "--children goes with --pid"),
    (["--pid", "1", "--", "true"], "give --pid PID or a workload to launch, not both"),
    (["--event", "3", "--start", "x", "--", "true"], "give --event N or --start/--stop, not both"),
    (["--stop", "x", "--", "true"], "--stop needs --start"),
    (["--event", "3", "--log", "/no/such/dir/j.log", "--", "true"], "--log /no/such/dir/j.log: directory /no/such/dir"),
    (["--pid", "2147483647", "--log", "j.log"], "--pid 2147483647: no such process"),
    (["diff", "a.data", "b.data", "--threshold", "200"], "--threshold 200.0: give a percentage from 0 to 100"),
    (["diff", "/no/a.data", "7"], "/no/a.data: neither a perf.data file nor a stored campaign id"),
])
def test_cli_bad_input_one_line_exit_2(tmp_path, capsys, args, msg):
    from perflab.cli import main as cli_main

    db = tmp_path / "p.db"
    with pytest.raises(SystemExit) as exc:
        cli_main(["profile", *args[:1], "--db", str(db), *args[1:]] if args[0] == "diff"
                 else ["profile", "--db", str(db), *args])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"perflab: error: {msg}") and err.count("\n") == 1
    assert "Traceback" not in err
