"""perflab gate's command line: bad input in one line and exit status 2, a baseline from another
machine refused unless asked, the help naming the gate's default."""

from __future__ import annotations

import pytest

from perflab.errors import PerflabError
from perflab.store import open_store
from perflab.studies.gate.study import GateConfig, evaluate, parse_threshold
from tests.forkcli import run_cases
from tests.helpers import _campaign
from tests.real.test_gate import perflab


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    with open_store(str(tmp_path / "perflab.db")) as store:
        run = _campaign(store, "run", [1.0, 1.01, 0.99, 1.0, 1.02])
        cores = _campaign(store, "cores", [1.0, 1.01, 0.99, 1.0, 1.02])
        store.set_baseline("main", run)
        store.set_baseline("cores-main", cores)
    cases = [
        (["compare", "--baseline", "nope", str(run)], "no baseline named 'nope'"),
        (["compare", "--baseline", "main", str(run), "--fail-if", "median>3"], "needs a sign and a unit"),
        (["compare", "--baseline", "main", str(run), "--fail-if", "p99>+3%"], "no measure 'p99'"),
        (["compare", "--baseline", "cores-main", str(run)], "same study"),
        (["compare", "--baseline", "main", str(run), "--fail-if", "median<+3%"], "a decrease"),
        (["compare", "--baseline", "main", str(run), "--fail-if", "rss>+3ms"], "units"),
        (["run", "--runs", "3", "--baseline", "cores-main", "--", "sleep", "0.01"], "'cores' campaign"),
        (["run", "--runs", "3", "--baseline", "main", "--fail-if", "p99>+3%", "--", "sleep", "0.01"], "p99"),
        (["run", "--runs", "3", "--fail-if", "median>+3%", "--", "sleep", "0.01"], "--baseline"),
        (["baseline", "set", "bad name", str(run)], "not usable"),
        (["baseline", "show", "nope"], "no baseline named"),
        (["baseline", "rm", "nope"], "no baseline named"),
        (["baseline", "set", "x", "999"], "no campaign 999"),
    ]
    # Each command line in its own process, forked from one that imported perflab once
    # (tests/forkcli.py): the real entry point, exit status and stderr, 13 interpreter starts fewer.
    outcomes = run_cases([args for args, _ in cases], tmp_path, {"PERFLAB_DB": str(tmp_path / "perflab.db")})
    for (args, needle), (code, err) in zip(cases, outcomes, strict=True):
        assert code == 2, (args, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("perflab: error:") and needle in lines[0], (args, lines)
    with open_store(str(tmp_path / "perflab.db")) as store:
        # the refused runs measured nothing and left no campaign behind
        assert [c.id for c in store.campaigns()] == [run, cores]


def test_cross_machine_is_refused_unless_asked(tmp_path):
    with open_store(str(tmp_path / "perflab.db")) as store:
        h1 = store.add_host({"hostname": "node-a"})
        h2 = store.add_host({"hostname": "node-b"})
        a = _campaign(store, "run", [1.0, 1.01, 0.99, 1.0, 1.02], host=h1)
        b = _campaign(store, "run", [1.0, 1.02, 0.98, 1.01, 1.0], host=h2)
        store.set_baseline("main", a)
        with pytest.raises(PerflabError, match="node-a .* node-b.*--cross-machine"):
            evaluate(GateConfig("main", b, (parse_threshold("median>+3%"),)), store)
    p = perflab("compare", "--baseline", "main", str(b), "--cross-machine", cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "warning: baseline 'main' was measured on node-a" in p.stderr


def test_the_help_names_the_gates_own_default():
    from perflab.cli.gate_common import DEFAULT_FAIL_IF_HELP
    from perflab.studies.gate.study import DEFAULT_FAIL_IF

    assert DEFAULT_FAIL_IF_HELP == DEFAULT_FAIL_IF


def test_until_decided_gate_refuses_a_baseline_it_cannot_look_against(tmp_path):
    p = perflab("run", "--runs", "1", "-n", "work", "--baseline-save", "thin", "--", "true", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    for args, msg in ((["-n", "work", "--fail-if", "median>+5%"], "baseline 'thin' has 1 positive run of 'work' "
                                                                  "with median: --until-decided needs 2 or more"),
                      (["-n", "work", "--fail-if", "energy>+5%"], "the baseline has no measure 'energy'"),
                      (["-n", "other", "true", "-n", "work"], "has no runs of 'other'")):
        p = perflab("run", *args, "--baseline", "thin", "--until-decided", "--", "true", cwd=tmp_path)
        err = p.stderr.strip().splitlines()
        assert p.returncode == 2 and len(err) == 1 and msg in err[0] and "Traceback" not in p.stderr, p.stderr
