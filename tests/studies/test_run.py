"""`perflab run`: scheduler on the MockExecutor (exact numbers), exports (the command line end to end:
tests/cli/test_run.py, real processes: tests/real/test_run.py)."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest

from perflab.errors import PerflabError
from perflab.measure.executor import MockExecutor
from perflab.model import MetricPattern, RunResult
from perflab.platform.machine import Machine
from perflab.platform.topology import Topology
from perflab.report import export
from perflab.report.terminal.run import render
from perflab.store import open_store
from perflab.studies import resume_study, run_study
from perflab.studies.run import result as run_result
from perflab.studies.run import study as run_mod
from perflab.studies.run.study import Command, RunConfig
from perflab.studies.run.result import RunStudyResult

HYPERFINE_KEYS = {"command", "mean", "stddev", "median", "user", "system", "min", "max",
                  "times", "memory_usage_byte", "exit_codes"}


def cmd(text: str) -> Command:
    return Command(text, tuple(text.split()))


MACHINE = Machine(topology=Topology(cpus=(), cores=(), sockets=(), nodes=()), metadata={"hostname": "t"})


def run_run(config: RunConfig, executor, store):
    return run_study(run_mod, config, store, executor, machine=MACHINE)


@pytest.fixture
def store(tmp_path):
    s = open_store(str(tmp_path / "r.db"))
    yield s
    s.close()


def test_fixed_runs_interleaved_and_stored(store):
    ex = MockExecutor()
    cfg = RunConfig(commands=(cmd("sleep 0.2"), cmd("sleep 0.1")), runs=5, warmup=2, seed=1)
    res = run_run(cfg, ex, store)
    # 2 warmups each, then 5 rounds of both commands, each round in a shuffled order
    assert len(ex.calls) == 2 * 2 + 5 * 2
    rounds = [tuple(s.label for s in ex.calls[4 + 2 * k: 6 + 2 * k]) for k in range(5)]
    assert all(sorted(r) == ["sleep 0.1", "sleep 0.2"] for r in rounds)
    assert len(set(rounds)) == 2  # both orders occur with seed 1
    a, b = res.benchmarks
    assert a.summary["median"] == pytest.approx(0.2) and b.summary["median"] == pytest.approx(0.1)
    # n = 5: min..max is the narrowest interval that reaches 95 %? No: it covers 1 - 2/32.
    assert b.median_ci == {"low": pytest.approx(0.1), "high": pytest.approx(0.1), "level": 0.9375}
    # the first command is the reference; the other is compared with it
    assert a.relative["ratio"] == 1.0 and a.relative["reference"] and not a.relative["significant"]
    assert b.relative["ratio"] == pytest.approx(0.5) and b.relative["verdict"] == "faster"
    assert b.relative["high"] < 1
    assert res.fastest is b and res.reference is a
    stored = store.measurements(res.campaign_id)
    assert len(stored) == 10 and {m.label for m in stored} == {"sleep 0.1", "sleep 0.2"}
    assert sorted(m.rep for m in stored if m.label == "sleep 0.1") == [0, 1, 2, 3, 4]
    camp = store.campaign(res.campaign_id)
    assert camp.status == "done"
    # the stored summary is the result: from_dict gives it back, and analyse on the stored runs
    # gives the same numbers
    again = RunStudyResult.from_dict(camp.summary)
    assert [x.times for x in again.benchmarks] == [x.times for x in res.benchmarks]
    replay = run_mod.analyse(RunConfig.from_dict(camp.config), stored)
    assert [x.summary for x in replay.benchmarks] == [x.summary for x in res.benchmarks]


def test_config_round_trips(store):
    cfg = RunConfig(commands=(Command("a {x}", ("a", "{x}"), shell=False),), runs=3,
                    metrics=(MetricPattern(r"(?P<n>\d+)"),), parameters=(("x", ("1", "2")),),
                    cpus=(0,), env=(("A", "1"),))
    assert RunConfig.from_dict(cfg.as_dict()) == cfg


def test_parameter_scan_substitutes(store):
    ex = MockExecutor()
    cfg = RunConfig(commands=(Command("sleep {t}", ("sleep", "{t}")),), runs=2,
                    parameters=(("t", ("0.1", "0.3")),))
    res = run_run(cfg, ex, store)
    assert [b.command for b in res.benchmarks] == ["sleep 0.1", "sleep 0.3"]
    assert [b.params for b in res.benchmarks] == [{"t": "0.1"}, {"t": "0.3"}]
    assert [b.summary["median"] for b in res.benchmarks] == pytest.approx([0.1, 0.3])


def test_same_command_twice_gets_its_own_key(store):
    res = run_run(RunConfig(commands=(cmd("sleep 0.1"), cmd("sleep 0.1")), runs=3), MockExecutor(), store)
    assert [b.command for b in res.benchmarks] == ["sleep 0.1", "sleep 0.1 #2"]
    assert [b.n for b in res.benchmarks] == [3, 3]


def test_adaptive_precision_stops_quiet_command_early(store):
    # 'quiet' has 0.1% jitter, 'noisy' +-20%: precision 1% stops quiet once the order-statistic
    # interval reaches 95 % (n = 6), noisy at max.
    counter = {"quiet": 0, "noisy": 0}

    def model(spec):
        k = counter[spec.label]
        counter[spec.label] += 1
        if spec.label == "quiet":
            return 0.1 * (1 + 0.001 * ((k % 3) - 1))
        return 0.1 * (1 + 0.2 * ((k * 7 % 5) - 2) / 2)

    cfg = RunConfig(commands=(Command("quiet", ("q",)), Command("noisy", ("n",))),
                    precision=0.01, min_runs=5, max_runs=40)
    res = run_run(cfg, MockExecutor(model), store)
    quiet, noisy = res.benchmarks
    assert quiet.n == 6
    assert noisy.n == 40


def test_default_time_budget(store):
    # without --runs: enough runs for 3 s of measuring, at least min_runs
    res = run_run(RunConfig(commands=(cmd("sleep 0.5"),)), MockExecutor(), store)
    assert res.benchmarks[0].n == 10
    res = run_run(RunConfig(commands=(cmd("sleep 0.01"),)), MockExecutor(), store)
    assert res.benchmarks[0].n == 300


def test_max_time(store):
    res = run_run(RunConfig(commands=(cmd("sleep 1"),), runs=100, max_time=4.5), MockExecutor(), store)
    assert res.benchmarks[0].n == 5 and res.stopped_by == "max-time"


def _failing_after(ex_calls, good: int):
    def model(spec):
        code = 0 if len(ex_calls()) <= good else 4
        return RunResult(wall_ns=1000, user_s=0, sys_s=0, maxrss_kb=1, minflt=0, majflt=0,
                         nvcsw=0, nivcsw=0, exit_code=code, stderr_tail="boom\nlast words")
    return model


def test_failure_stops_with_message_and_keeps_runs(store):
    ex = MockExecutor()
    ex.model = _failing_after(lambda: ex.calls, 3)
    with pytest.raises(PerflabError, match=r"command 'x' exited with status 4 \(stderr: last words\)"):
        run_run(RunConfig(commands=(cmd("x"),), runs=10), ex, store)
    camp = store.campaigns(study="run")[-1]
    assert camp.status == "failed"
    stored = store.measurements(camp.id)
    assert len(stored) == 4 and stored[-1].result.failure == "exit status 4"  # the failing run too


def test_failed_runs_are_stored_and_left_out(store):
    ex = MockExecutor()
    ex.model = _failing_after(lambda: ex.calls, 3)
    res = run_run(RunConfig(commands=(cmd("x"),), runs=10, ignore_failure=True), ex, store)
    b = res.benchmarks[0]
    assert b.n == 3 and b.failures == {"exit status 4": 7} and b.times == [1e-6] * 3
    assert "7 of 10 runs failed (7 exit status 4)" in " ".join(res.warnings)
    assert len(store.measurements(res.campaign_id)) == 10
    # a command whose every run fails is reported as failed, not as fast
    res = run_run(RunConfig(commands=(cmd("sleep 0.1"), cmd("false")), runs=3, ignore_failure=True),
                  MockExecutor(), store)
    assert res.fastest.command == "sleep 0.1" and res.benchmarks[1].summary is None
    assert "every run of false failed" in run_result.verdict(res)


def test_resume_repeats_no_stored_run(store):
    class Stop(KeyboardInterrupt):
        pass

    ex = MockExecutor()

    def model(spec):
        if len(ex.calls) == 8:
            raise Stop()
        return float(spec.argv[1])

    ex.model = model
    cfg = RunConfig(commands=(cmd("sleep 0.2"), cmd("sleep 0.1")), runs=6, warmup=1, seed=3)
    with pytest.raises(Stop):
        run_run(cfg, ex, store)
    camp = store.campaigns(study="run")[-1]
    assert camp.status == "interrupted" and camp.n_measurements == 5  # 8th call: 2 warm-ups, 5 runs
    ex2 = MockExecutor()
    _, res = resume_study(store, camp.id, ex2)
    assert len(ex2.calls) == 7  # only the missing runs: no warm-up, nothing repeated
    full = run_run(cfg, MockExecutor(), store)
    assert [b.times for b in res.benchmarks] == [b.times for b in full.benchmarks]
    assert store.campaign(camp.id).n_measurements == 12


def test_terminal_snapshot(store):
    from rich.console import Console

    cfg = RunConfig(commands=(cmd("sleep 0.2"), cmd("sleep 0.1"), cmd("false")), runs=5,
                    ignore_failure=True, seed=1)
    res = run_run(cfg, MockExecutor(), store)
    console = Console(width=160, record=True, file=io.StringIO(), color_system=None)
    render(res, console)
    text = console.export_text()
    snap = Path(__file__).parents[1] / "snapshots" / "run.txt"
    if os.environ.get("PERFLAB_UPDATE_SNAPSHOTS"):
        snap.write_text(text)
    assert text == snap.read_text()


def test_too_few_runs_call_nothing_and_say_how_many_would(store):
    from rich.console import Console

    # 3 runs each: the widest interval covers 90 %, short of the 95 % a "slower" needs
    res = run_run(RunConfig(commands=(cmd("sleep 0.2"), cmd("sleep 0.1")), runs=3, seed=1), MockExecutor(), store)
    slow = res.benchmarks[1].relative  # against the first command, the reference
    assert slow["ratio"] == pytest.approx(0.5) and slow["level"] == pytest.approx(0.9) and slow["target"] == 0.95
    assert not slow["significant"]
    assert any("3 and 3 runs cannot reach 95.0% confidence (at most 90%)" in w and "at least 4 runs each" in w
               for w in res.warnings)
    assert "too few runs to tell from it: sleep 0.1" in run_result.verdict(res)
    # 4 runs each reach it: the same difference is called
    res4 = run_run(RunConfig(commands=(cmd("sleep 0.2"), cmd("sleep 0.1")), runs=4, seed=1), MockExecutor(), store)
    assert res4.benchmarks[1].relative["significant"] and not any("cannot reach" in w for w in res4.warnings)
    # 1 run: no interval at all, and the table says so rather than showing a 0 % one
    res1 = run_run(RunConfig(commands=(cmd("sleep 0.1"),), runs=1), MockExecutor(), store)
    console = Console(width=160, record=True, file=io.StringIO(), color_system=None)
    render(res1, console)
    text = console.export_text()
    assert "1 run: no CI" in text and "0% CI" not in text and "median [" not in text
    assert run_result.verdict(res1) == "sleep 0.1: median 0.1 s (no CI, 1 run)."


def test_exports_hyperfine_schema(store, tmp_path):
    cfg = RunConfig(commands=(Command("sleep {t}", ("sleep", "{t}")),), runs=3,
                    parameters=(("t", ("0.1", "0.2")),))
    res = run_run(cfg, MockExecutor(), store)
    export.export_json(res, str(tmp_path / "e.json"))
    data = json.loads((tmp_path / "e.json").read_text())
    r0 = data["results"][0]
    assert HYPERFINE_KEYS <= set(r0)
    assert r0["parameters"] == {"t": "0.1"}
    assert r0["mean"] == pytest.approx(0.1) and r0["times"] == pytest.approx([0.1] * 3)
    assert r0["memory_usage_byte"] == [1024 * 1024] * 3 and r0["exit_codes"] == [0, 0, 0]
    assert r0["user"] == pytest.approx(0.09) and r0["median_ci"]["level"] == 0.75
    export.export_csv(res, str(tmp_path / "e.csv"))
    rows = list(csv.reader((tmp_path / "e.csv").open()))
    assert rows[0][:9] == ["command", "mean", "stddev", "median", "user", "system", "min", "max",
                           "parameter_t"]
    assert rows[2][0] == "sleep 0.2"
    export.export_markdown(res, str(tmp_path / "e.md"))
    md = (tmp_path / "e.md").read_text().splitlines()
    assert md[0].startswith("| Command | Mean [ms] | Min [ms] | Max [ms] | Relative | Median [ms] (75% CI)")
    assert "| `sleep 0.1` | 100.0 ± 0.0 | 100.0 | 100.0 | 1.00 |" in md[2]
