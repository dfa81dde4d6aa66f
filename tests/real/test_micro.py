"""perflab micro on real processes: malloc below and above the mmap threshold seen by strace, the
threshold probe per ABI, shared memory touched, real runs end to end, kill -9 and resume."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from perflab.kernels.micro import build_micro
from perflab.measure.executor import RealExecutor
from perflab.store import open_store
from perflab.studies import run_study
from perflab.studies.micro import study as micro
from tests.conftest import kill_then_resume
from tests.studies.test_micro import _abis


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
