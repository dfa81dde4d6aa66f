"""perflab frontend on real processes: generated programs built and run, huge-text remap in smaps,
THP restored after SIGTERM, a real scan, kill -9 and resume, perf stat without a PMU."""

from __future__ import annotations

import os
import re
import signal
import subprocess

import pytest

from perflab.kernels.frontend import facts
from perflab.kernels.frontend.generate import KINDS, build_program, code_layout
from perflab.measure import perfstat
from perflab.measure.executor import RealExecutor
from perflab.platform.sysfs import Root
from perflab.report.terminal.frontend import render
from perflab.store import open_store
from perflab.studies import run_study
from perflab.studies.frontend import study as fe
from tests.conftest import kill_then_resume
from tests.studies.test_frontend import SMALL, _machine


def _thp_usable() -> bool:
    return facts.thp_mode() not in (None, "never")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("size", [24 << 10, 300 << 10])
def test_generated_code_has_requested_size(kind, size):
    prog, built = build_program(kind, size)
    layout = code_layout(built.path, prog)  # nm -S of the built binary
    assert abs(layout.total_bytes - size) <= 0.10 * size, (layout.total_bytes, size)
    assert layout.hot_bytes(prog.cases // 2) == pytest.approx(layout.total_bytes / 2, rel=0.01)
    out = subprocess.run([str(built.path), str(prog.cases), "20000"], capture_output=True, text=True, check=True)
    assert f"kind={kind} n={prog.cases}" in out.stdout
    huge = subprocess.run([str(built.path), str(prog.cases), "20000", "--huge"], capture_output=True, text=True)
    if huge.returncode == 0:  # the same opcodes give the same result whatever the page mode
        assert out.stdout.split("checksum=")[1] == huge.stdout.split("checksum=")[1]


def test_huge_text_remap_verified_in_smaps():
    if not _thp_usable():
        pytest.skip("THP unavailable or 'never' on this machine")
    prog, built = build_program("switch", 64 << 10)
    out = subprocess.run([str(built.path), "10", "1000", "--huge"], capture_output=True, text=True, check=True)
    assert int(re.search(r"huge_text_kb=(-?\d+)", out.stdout).group(1)) >= 2048
    plain = subprocess.run([str(built.path), "10", "1000"], capture_output=True, text=True, check=True)
    assert "huge_text_kb=0" in plain.stdout


def test_thp_restored_after_sigterm(tmp_path):
    (tmp_path / "sys/kernel/mm/transparent_hugepage").mkdir(parents=True)
    thp = tmp_path / facts.THP_ENABLED
    thp.write_text("always madvise [never]\n")
    root = Root(str(tmp_path))
    with facts.ThpChange(False, root) as change:  # no option: nothing changes
        assert change is None and thp.read_text() == "always madvise [never]\n"
    with open_store(str(tmp_path / "s.db")) as store:
        with pytest.raises(KeyboardInterrupt):
            with store.open_campaign("frontend", {}) as camp:
                with facts.ThpChange(True, root) as change:
                    assert "switched from never to madvise" in change and thp.read_text() == "madvise"
                    os.kill(os.getpid(), signal.SIGTERM)
        assert store.campaign(camp.id).status == "interrupted"
    assert thp.read_text() == "never"


def test_end_to_end_real_scan(tmp_path):
    from rich.console import Console

    cfg = fe.FrontendConfig(**{**SMALL, "max_bytes": 256 << 10}, reps=3)
    with open_store(str(tmp_path / "fe.db")) as store, RealExecutor() as ex:
        res = run_study(fe, cfg, store, ex)
        assert store.campaign(res.campaign_id).status == "done"
        assert len([p for p in res.points if p.mode == "4k"]) == 5
        if "2m" in {p.mode for p in res.points}:
            assert all(p.huge_kb >= 2048 for p in res.points if p.mode == "2m")
        else:
            assert "2 MiB text pages" in res.huge_reason
        assert "no iTLB or L1i counts" in res.counters_reason  # this machine has no PMU
        assert any("no size can pass Holm" in n for n in res.notes)  # 3 rounds are too few
        console = Console(record=True, width=200)
        render(res, console)
        assert "verdict: " in console.export_text()


def test_kill_9_then_resume(tmp_path):
    camp, before, stdout, result = kill_then_resume(
        ["frontend", "--min-size", "16K", "--max-size", "64K", "--points-per-octave", "1",
         "--iters", "100000", "--reps", "4", "--no-perf-span"], tmp_path, 6)
    assert camp.status == "running" and len(before) < 1 + 3 * 2 * 4  # killed mid-study
    assert "verdict: " in stdout
    res = fe.FrontendResult.from_dict(result)
    db = tmp_path / "k.db"
    with open_store(str(db)) as store:
        after = store.measurements(camp.id)
        keys = [(m.label, str(m.params), m.rep) for m in after]
        assert len(keys) == len(set(keys))  # nothing repeated
        assert all(k in keys and dict(zip(keys, (m.id for m in after)))[k] == i for k, i in before.items())
        modes = {p.mode for p in res.points}
        assert len([k for k in keys if "probe" not in k[1]]) == 3 * len(modes) * 4  # nothing lost
        assert store.campaign(camp.id).status == "done" and len(res.points) == 3 * len(modes)
        assert set(res.as_dict()) == set(fe.FrontendResult().as_dict())


@pytest.mark.skipif(perfstat.perf_binary() is None, reason="perf is not installed")
def test_real_perf_stat_wrapper_without_pmu_goes_on_with_time():
    from perflab.platform import probes

    if probes.hw_counters().available:
        pytest.skip("this machine has a PMU: the absence path is not reachable here")
    prog, built = build_program("switch", 16 << 10)
    spec = fe.plan(fe.FrontendConfig(**SMALL, reps=1, modes=("4k",)), _machine(), str(built.path),
                   counters=True)[0]
    assert spec.perf_events == fe.COUNTER_EVENTS
    with RealExecutor() as ex:
        res = ex.run(spec)
    assert res.ok and res.metrics["ns_per_iter"] > 0
    assert not set(fe.COUNTER_EVENTS) & set(res.counters)  # perf said <not supported>
