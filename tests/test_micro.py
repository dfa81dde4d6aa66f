"""perflab micro: per-ABI runs, the ABI table, malloc thresholds, shm, bad input."""

from __future__ import annotations

import re
import subprocess

import pytest

from perflab.errors import PerflabError
from perflab.measure.executor import RealExecutor
from perflab.model import RunResult
from perflab.platform import probes
from perflab.store import open_store
from perflab.studies import micro


def _runnable_abis():
    ok, skipped = micro.usable_abis(micro.ABIS)
    return ok, skipped


def test_micro_runs_each_available_abi_and_makes_the_table(tmp_path):
    from rich.console import Console

    cfg = micro.MicroConfig(benches=("getpid", "call", "mul64", "write", "fprintf", "malloc_small",
                                     "malloc_large"),
                            reps=2, scale=0.01, io_dir=str(tmp_path), shm="off")
    store = open_store(str(tmp_path / "m.db"))
    res = micro.run_micro(cfg, RealExecutor(), store)
    abis, skipped = _runnable_abis()
    assert res.abis == abis and "m64" in abis
    for bench in cfg.benches:
        for abi in abis:
            cell = next(c for c in res.cells if c.bench == bench and c.abi == abi)
            assert cell.n == 2 and cell.lo_ns <= cell.median_ns <= cell.hi_ns and cell.median_ns > 0
    if "m32" in abis:
        assert {d.bench for d in res.diffs if d.abi == "m32"} == set(cfg.benches)
        assert all(d.p_adjusted is not None for d in res.diffs)
    if not probes.x32_runnable().available:
        assert "not supported by this kernel" in res.skipped.get("mx32", "") or "mx32" in res.skipped
    # malloc below the threshold comes from brk, above it from mmap (glibc's 128 KiB default)
    small = next(c for c in res.cells if c.bench == "malloc_small" and c.abi == "m64")
    large = next(c for c in res.cells if c.bench == "malloc_large" and c.abi == "m64")
    assert small.extra["mmap_blocks"] == 0 and small.extra["brk_growth_bytes"] > 0
    assert large.extra["mmap_blocks"] == 16
    # buffered output beats one write() per byte
    w = next(c for c in res.cells if c.bench == "write" and c.abi == "m64")
    f = next(c for c in res.cells if c.bench == "fprintf" and c.abi == "m64")
    assert f.ops_per_s > 3 * w.ops_per_s
    console = Console(record=True, width=220)
    micro.render(res, console)
    text = console.export_text()
    assert "-m64" in text and "getpid" in text and "malloc below and above" in text
    if "m32" in abis:
        assert "-m32 vs -m64" in text
    assert len(store.measurements(res.campaign_id)) == len(cfg.benches) * len(abis) * 2
    assert not list(tmp_path.glob("perflab-micro-*"))  # temporary files removed


def test_shm_touches_more_than_its_segments_one_at_a_time():
    abi = "m32" if "m32" in _runnable_abis()[0] else "m64"
    path = micro.build_micro(abi).path
    out = subprocess.run([str(path), "--bench", "shm", "--iters", "1", "--total", str(48 << 20),
                          "--size", str(16 << 20)], capture_output=True, text=True, check=True)
    assert "segments=3" in out.stdout and f"touched_bytes={48 << 20}" in out.stdout
    # each page holds what the write pass put there after detach and re-attach
    pages = 16 << 20 >> 12
    expect = sum((i + p) & 0xFF for i in range(3) for p in range(pages))
    assert re.search(r"checksum=(\d+)", out.stdout).group(1) == str(expect)


def test_shm_plan_is_off_when_memory_is_short(tmp_path):
    root = tmp_path / "root"
    (root / "proc").mkdir(parents=True)
    (root / "proc" / "meminfo").write_text("MemTotal: 4000000 kB\nMemAvailable: 2000000 kB\n")
    from perflab.platform.sysfs import Root

    cfg = micro.MicroConfig(shm="auto")
    run, _, why = micro.shm_plan(cfg, "auto", Root(str(root)))
    assert not run and "memory is short" in why
    run, total, why = micro.shm_plan(cfg, "on", Root(str(root)))
    assert run and total < 4 << 30 and "scaled" in why


def _rr(ns):
    return RunResult(wall_ns=1, user_s=0, sys_s=0, maxrss_kb=0, minflt=0, majflt=0, nvcsw=0, nivcsw=0,
                     exit_code=0, metrics={"ns_per_op": ns, "ops_per_s": 1e9 / ns, "ops": 100})


def test_abi_percentage_difference_is_exact():
    samples = {("getpid", "m64"): [_rr(100.0 + i) for i in range(10)],
               ("getpid", "m32"): [_rr(150.0 + 1.5 * i) for i in range(10)],
               ("call", "m64"): [_rr(2.0)] * 10,
               ("call", "m32"): [_rr(2.0)] * 10}
    cells, diffs = micro.analyse(samples, ["getpid", "call"], ["m64", "m32"])
    d = next(d for d in diffs if d.bench == "getpid")
    assert d.pct == pytest.approx(50.0) and d.significant and d.effect_size == pytest.approx(1.0)
    c = next(d for d in diffs if d.bench == "call")
    assert c.pct == pytest.approx(0.0) and not c.significant


def test_bad_input():
    with pytest.raises(PerflabError, match="unknown benchmark 'nope'"):
        micro.MicroConfig(benches=("nope",))
    with pytest.raises(PerflabError, match="unknown ABI"):
        micro.MicroConfig(abis=("m16",))
    from perflab.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["micro", "--bench", "nope", "--db", "/nonexistent/x.db"])
    assert exc.value.code == 2
