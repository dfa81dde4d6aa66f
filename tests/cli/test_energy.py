"""perflab instances --energy through the command line on a machine without an energy source."""

from __future__ import annotations

from perflab.measure.energy import choose_meter


def test_instances_cli_says_once_that_energy_is_not_measured_here_where_asked(tmp_path):
    import subprocess
    import sys

    meter, note = choose_meter("auto")
    for asked in ((), ("--energy", "auto")):
        p = subprocess.run([sys.executable, "-m", "perflab", "instances", "--n", "1,2", "--reps", "1",
                            "--policy", "none", *asked, "--db", str(tmp_path / "s.db"), "--", "true"],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        if meter is None:
            # silent unless --energy was given: the note stood before every table on a VM
            assert p.stdout.count("energy: not measured") == (1 if asked else 0)
            assert "energy against copies" not in p.stdout
