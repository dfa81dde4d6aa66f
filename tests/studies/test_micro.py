"""perflab micro: the shared-memory plan, the paired ABI analysis, snapshot, bad input (real runs,
strace, the mmap threshold probe, kill -9 and resume: tests/real/test_micro.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from perflab.errors import PerflabError
from perflab.measure.executor import MockExecutor
from perflab.model import RunResult
from perflab.platform.sysfs import Root
from perflab.report.terminal.micro import render
from perflab.studies.micro import study as micro

SNAPSHOT = Path(__file__).parents[1] / "snapshots" / "micro.txt"


def _abis() -> list[str]:
    return micro.usable_abis(micro.ABIS)[0]


def test_shm_plan_is_off_when_memory_is_short(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "meminfo").write_text("MemTotal: 4000000 kB\nMemAvailable: 2000000 kB\n")
    cfg = micro.MicroConfig(shm="auto")
    run, _, why = micro.shm_plan(cfg, "auto", Root(str(tmp_path)))
    assert not run and "memory is short" in why
    run, total, why = micro.shm_plan(cfg, "on", Root(str(tmp_path)))
    assert run and total < 4 << 30 and "scaled" in why


def _mock_runs(cfg, fail_abi=None):
    """Mock rounds: getpid 50 % slower on m32, call equal; a threshold probe per ABI."""
    specs = micro.plan(cfg, None, ["m64", "m32"], ["getpid", "call"])

    def model(spec):
        b, a, rnd = spec.params["bench"], spec.params["abi"], spec.params["round"]
        ns = {"getpid": 100.0, "call": 2.0}[b] * (1.5 if b == "getpid" and a == "m32" else 1.0)
        ns *= 1 + 0.01 * ((rnd * 7 + len(a)) % 5)
        bad = a == fail_abi and b == "call"
        return RunResult(wall_ns=1_000_000, user_s=0, sys_s=0, maxrss_kb=0, minflt=0, majflt=0, nvcsw=0,
                         nivcsw=0, exit_code=1 if bad else 0,
                         metrics={"ns_per_op": ns, "ops_per_s": 1e9 / ns, "ops": 1000})

    ex = MockExecutor(model=model)
    probe = RunResult(wall_ns=1, user_s=0, sys_s=0, maxrss_kb=0, minflt=0, majflt=0, nvcsw=0, nivcsw=0,
                      exit_code=0, metrics={"sizeof_long": 8, "initial_low": 126976, "initial_high": 155648,
                                            "dynamic_max_low": 28213248, "dynamic_max_high": 33550336,
                                            "formula": 33554432})
    return [({"probe": "mmap_threshold", "abi": "m64"}, probe)] + [(dict(s.params), ex.run(s)) for s in specs]


def test_paired_abi_analysis_exact():
    cfg = micro.MicroConfig(benches=("getpid", "call"), abis=("m64", "m32"), reps=10)
    res = micro.analyse(cfg, _mock_runs(cfg), ["m64", "m32"])
    g = next(d for d in res.diffs if d.bench == "getpid")
    assert g.pct == pytest.approx(50.0, abs=1.0) and g.significant and g.effect_size == pytest.approx(1.0)
    assert g.ci_pct.level == pytest.approx(1 - 2 * 11 / 1024) and g.ci_pct.low > 40
    c = next(d for d in res.diffs if d.bench == "call")
    assert abs(c.pct) < 5 and not c.significant
    assert res.thresholds["m64"]["formula"] == 32 << 20
    cell = next(c for c in res.cells if c.bench == "getpid" and c.abi == "m64")
    assert cell.n == 10 and cell.ci.low <= cell.median_ns <= cell.ci.high and cell.ci.level > 0.95
    assert micro.MicroResult.from_dict(res.as_dict()) == res


def test_failed_runs_are_left_out_and_all_failed_is_failed():
    cfg = micro.MicroConfig(benches=("getpid", "call"), abis=("m64", "m32"), reps=10)
    res = micro.analyse(cfg, _mock_runs(cfg, fail_abi="m32"), ["m64", "m32"])
    cell = next(c for c in res.cells if c.bench == "call" and c.abi == "m32")
    assert cell.median_ns is None and cell.failed == 10 and res.failures == {"exit status 1": 10}
    assert not any(d.bench == "call" for d in res.diffs) and res.runs == 40


def test_snapshot_of_terminal_output():
    from rich.console import Console

    cfg = micro.MicroConfig(benches=("getpid", "call"), abis=("m64", "m32"), reps=10)
    res = micro.analyse(cfg, _mock_runs(cfg, fail_abi="m32"), ["m64", "m32"])
    res.skipped["mx32"] = "not supported by this kernel (test)"
    console = Console(record=True, width=150, color_system=None)
    render(res, console)
    text = console.export_text()
    if os.environ.get("PERFLAB_UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(text)
    assert text == SNAPSHOT.read_text()


def test_bad_input():
    with pytest.raises(PerflabError, match="unknown benchmark 'nope'"):
        micro.MicroConfig(benches=("nope",))
    with pytest.raises(PerflabError, match="unknown ABI"):
        micro.MicroConfig(abis=("m16",))
