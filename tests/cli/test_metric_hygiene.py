"""Metric hygiene: a regex that gives no number in any run is one warning line naming it and
showing the output it saw; a primary metric that was never measured stops the command (exit 2)."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest

from perflab.measure.metrics import compile_patterns, extract, hygiene, reset_ledger


@pytest.fixture(autouse=True)
def fresh_ledger():
    reset_ledger()
    yield
    reset_ledger()


def test_a_regex_that_never_matches_is_named_with_the_output_it_saw():
    pats = compile_patterns([r"fps=(?P<fps>\d+)", r"frame=(?P<frame>\d+)"])
    for _ in range(3):
        assert extract(pats, "frame=10 q=28\n", "") == {"frame": 10.0}
    warnings, error = hygiene()
    assert warnings == [r"metric regex 'fps=(?P<fps>\d+)' matched in none of 3 runs (output ends: 'frame=10 q=28')"]
    assert error is None


def test_a_regex_of_two_groups_that_never_matches_is_one_line():
    pats = compile_patterns([r"total=(?P<total>\d+) touched=(?P<touched>\d+)"])
    extract(pats, "bench=x\n", "")
    warnings, _ = hygiene()
    assert warnings == [r"metric regex 'total=(?P<total>\d+) touched=(?P<touched>\d+)' matched in none of 1 run "
                        r"(output ends: 'bench=x')"]


def test_micro_asks_each_kernel_only_for_what_it_prints():
    # the shm and malloc patterns on their own runs: a quick lab leaves shm out and warned of it
    from perflab.studies.micro import study as micro

    specs = micro.plan(micro.MicroConfig(reps=1), None, abis=["m64"],
                       benches=["getpid", "malloc_small", "shm"], shm_total=1 << 20)
    groups = {s.params["bench"]: {g for p in s.metrics for g in re.compile(p.regex).groupindex} for s in specs}
    assert "shm_total_bytes" in groups["shm"] and "minflt_per_op" in groups["malloc_small"]
    assert not {"shm_total_bytes", "minflt_per_op"} & groups["getpid"]
    assert not {"shm_total_bytes"} & groups["malloc_small"]


def test_a_non_number_is_shown():
    pats = compile_patterns([r"q=(?P<q>\S+)"])
    extract(pats, "q=n/a\n", "")
    warnings, _ = hygiene()
    assert warnings == [r"metric regex 'q=(?P<q>\S+)' gave no number in 1 run: it captured 'n/a' for q"]


def test_a_regex_that_matched_once_is_quiet():
    pats = compile_patterns([r"fps=(?P<fps>\d+)"])
    extract(pats, "nothing", "")
    extract(pats, "fps=3", "")
    assert hygiene("fps") == ([], None)


def test_the_primary_metric_never_measured_is_the_error():
    pats = compile_patterns([r"FPS: (?P<fps>[\d.]+)"])
    extract(pats, "fps= 181.5\n", "")
    warnings, error = hygiene("fps")
    assert warnings == []
    assert error.startswith("primary metric fps was never measured: regex 'FPS: (?P<fps>[\\d.]+)' matched in none")


def perflab(tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "perflab", *args], capture_output=True, text=True, cwd=tmp_path)


def test_cli_run_stops_on_a_primary_metric_that_never_matched(tmp_path):
    (tmp_path / "perflab.toml").write_text(textwrap.dedent(r"""
        [workload.enc]
        command = ["echo", "fps= 181.5 frames=100"]
        metrics = ['FPS: (?P<fps>[\d.]+)']
        primary_metric = "fps"
    """))
    p = perflab(tmp_path, "run", "--runs", "2", "-w", "enc", "--energy", "off", "--db", "p.db")
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    errors = [ln for ln in p.stderr.splitlines() if ln.startswith("perflab: error:")]
    assert len(errors) == 1 and "primary metric fps was never measured" in errors[0]
    assert "'fps= 181.5 frames=100'" in errors[0]
    assert "median" not in p.stdout  # no table: nothing was called an answer


def test_cli_run_warns_once_per_silent_regex(tmp_path):
    p = perflab(tmp_path, "run", "--runs", "2", "--energy", "off", "--db", "p.db",
                "--metric", r"fps=(?P<fps>\d+)", "--metric", r"frame=(?P<frame>\d+)",
                "--", "echo", "frame=10")
    assert p.returncode == 0, p.stderr
    out = " ".join((p.stdout + p.stderr).split())  # piped output wraps at 100 columns
    assert out.count("warning: metric regex") == 1
    assert r"warning: metric regex 'fps=(?P<fps>\d+)' matched in none of 2 runs (output ends: 'frame=10')" in out
