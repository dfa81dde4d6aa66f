"""perflab micro: per-ABI runs, malloc below/above the mmap threshold (checked with strace), the
mmap threshold probe, the paired ABI analysis, snapshot, kill -9 and resume, bad input."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from perflab.errors import PerflabError
from perflab.kernels.micro import build_micro
from perflab.measure.executor import MockExecutor, RealExecutor
from perflab.model import RunResult
from perflab.platform.sysfs import Root
from perflab.report.terminal.micro import render
from perflab.store import open_store
from perflab.studies import run_study
from perflab.studies.micro import study as micro
from tests.conftest import kill_then_resume

SNAPSHOT = Path(__file__).parents[1] / "snapshots" / "micro.txt"


def _abis() -> list[str]:
    return micro.usable_abis(micro.ABIS)[0]


def _syscalls(argv: list[str]) -> dict[str, int]:
    """strace -c -f: calls per syscall name."""
    out = subprocess.run(["strace", "-f", "-c", "-e", "trace=brk,mmap,mmap2,munmap", *argv],
                         capture_output=True, text=True, check=True)
    calls: dict[str, int] = {}
    for line in out.stderr.splitlines():
        parts = line.split()
        if len(parts) >= 5 and parts[-1] in ("brk", "mmap", "mmap2", "munmap") and parts[3].isdigit():
            calls[parts[-1]] = calls.get(parts[-1], 0) + int(parts[3])
    return calls


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed")
@pytest.mark.parametrize("abi", ["m64", "m32"])
def test_malloc_large_is_mmap_and_small_is_brk_by_strace(abi):
    if abi not in _abis():
        pytest.skip(f"-{abi} does not run here")
    path = str(build_micro(abi).path)
    large = _syscalls([path, "--bench", "malloc_large", "--iters", "2000"])
    mmap = large.get("mmap", 0) + large.get("mmap2", 0)
    # every 1 MiB block is mapped and unmapped: glibc's dynamic threshold no longer turns them into brk
    assert mmap >= 2000 and large.get("munmap", 0) >= 2000 and large.get("brk", 0) < 10, large
    small = _syscalls([path, "--bench", "malloc_small", "--iters", "2000"])
    assert small.get("mmap", 0) + small.get("mmap2", 0) < 50 and small.get("brk", 0) >= 1, small


@pytest.mark.parametrize("abi", ["m64", "m32"])
def test_mmap_threshold_probe_per_abi(abi):
    if abi not in _abis():
        pytest.skip(f"-{abi} does not run here")
    out = subprocess.run([str(build_micro(abi).path), "--bench", "mmap_threshold", "--iters", "1"],
                         capture_output=True, text=True, check=True).stdout
    v = {k: int(x) for k, x in re.findall(r"(\w+)=(\d+)", out)}
    assert v["initial_low"] < 128 << 10 <= v["initial_high"]  # glibc's M_MMAP_THRESHOLD default
    if abi == "m64":  # the seed's formula is glibc's 64-bit maximum (chunk overhead aside)
        assert v["formula"] == 32 << 20 and v["dynamic_max_low"] < 32 << 20 <= v["dynamic_max_high"] + 4096
    else:  # 32-bit glibc caps it at 512 KiB, not at 4*1024*1024*sizeof(long) = 16 MiB
        assert v["formula"] == 16 << 20 and v["dynamic_max_low"] <= 512 << 10 < v["dynamic_max_high"]


def test_shm_touches_more_than_its_segments_one_at_a_time():
    abi = "m32" if "m32" in _abis() else "m64"
    out = subprocess.run([str(build_micro(abi).path), "--bench", "shm", "--iters", "1", "--total",
                          str(48 << 20), "--size", str(16 << 20)], capture_output=True, text=True, check=True)
    assert "segments=3" in out.stdout and f"touched_bytes={48 << 20}" in out.stdout
    pages = 16 << 20 >> 12
    expect = sum((i + p) & 0xFF for i in range(3) for p in range(pages))
    assert re.search(r"checksum=(\d+)", out.stdout).group(1) == str(expect)


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


def test_end_to_end_real_runs(tmp_path):
    cfg = micro.MicroConfig(benches=("getpid", "write", "fprintf", "malloc_small", "malloc_large"), reps=3,
                            scale=0.01, io_dir=str(tmp_path), shm="off")
    with open_store(str(tmp_path / "m.db")) as store, RealExecutor() as ex:
        res = run_study(micro, cfg, store, ex)
        abis = _abis()
        assert res.abis == abis and not res.failures
        assert set(res.thresholds) == set(abis)
        small = next(c for c in res.cells if c.bench == "malloc_small" and c.abi == "m64")
        large = next(c for c in res.cells if c.bench == "malloc_large" and c.abi == "m64")
        assert small.extra["mmap_blocks"] == 0 and large.extra["mmap_blocks"] == 16
        w = next(c for c in res.cells if c.bench == "write" and c.abi == "m64")
        f = next(c for c in res.cells if c.bench == "fprintf" and c.abi == "m64")
        assert f.ops_per_s > 3 * w.ops_per_s  # buffered output beats one write() per byte
        assert any("reaches only 75%" in n for n in res.notes)  # 3 rounds: min..max is a 75 % interval
        assert len(store.measurements(res.campaign_id)) == len(cfg.benches) * len(abis) * 3 + len(abis)
        assert not list(tmp_path.glob("perflab-micro-*"))  # temporary files removed


def test_kill_9_then_resume(tmp_path):
    # kill_then_resume holds the store at 5 runs until the kill: any count above that is mid-study.
    REPS = 10
    camp, before, stdout, result = kill_then_resume(
        ["micro", "--bench", "getpid", "--bench", "call", "--abi", "m64", "--reps", str(REPS),
         "--scale", "0.5", "--shm", "off", "--io-dir", str(tmp_path)], tmp_path, 5)
    assert camp.status == "running" and len(before) == 5  # killed mid-study
    assert "perflab micro" in stdout
    res = micro.MicroResult.from_dict(result)
    db = tmp_path / "k.db"
    with open_store(str(db)) as store:
        after = store.measurements(camp.id)
        keys = [(m.label, str(m.params), m.rep) for m in after]
        assert len(keys) == len(set(keys)) == 2 * REPS + 1
        assert all(dict(zip(keys, (m.id for m in after)))[k] == i for k, i in before.items())
        assert store.campaign(camp.id).status == "done" and [c.n for c in res.cells] == [REPS, REPS]
        assert set(res.as_dict()) == set(micro.MicroResult().as_dict())


def test_bad_input():
    with pytest.raises(PerflabError, match="unknown benchmark 'nope'"):
        micro.MicroConfig(benches=("nope",))
    with pytest.raises(PerflabError, match="unknown ABI"):
        micro.MicroConfig(abis=("m16",))
    from perflab.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["micro", "--bench", "nope", "--db", "/nonexistent/x.db"])
    assert exc.value.code == 2
