"""perflab frontend: the knee detector, the plan, the verdict on simulated scans, counters (recorded
perf stat outputs, absence path), snapshot (generated code built and run, real scans, THP restore,
kill -9 and resume: tests/real/test_frontend.py)."""

from __future__ import annotations

import math
import os
import random
from pathlib import Path

import pytest

from perflab.checks.frontend import model, verdict_check
from perflab.errors import PerflabError
from perflab.kernels.frontend import facts
from perflab.measure import perfstat
from perflab.measure.executor import MockExecutor
from perflab.platform.machine import Machine
from perflab.platform.topology import Topology
from perflab.report.terminal.frontend import render
from perflab.studies.frontend import study as fe
from perflab.studies.frontend.verdict import find_knee

DATA = Path(__file__).parents[1] / "data" / "perfstat"
SNAPSHOT = Path(__file__).parents[1] / "snapshots" / "frontend.txt"
SMALL = dict(min_bytes=16 << 10, max_bytes=64 << 10, points_per_octave=1, iters=100_000, perf_span=False)


def _machine() -> Machine:
    return Machine(topology=Topology(cpus=(), cores=(), sockets=(), nodes=()),
                   metadata={"probes": {"hw_counters": {"available": False, "reason": "no PMU (test)"}}})


def test_knee_detector_finds_planted_knee_and_none_in_a_line():
    sizes = [round((16 << 10) * 256 ** (i / 14)) for i in range(15)]
    planted = 512 << 10
    ys = [10.0 + (3.0 * math.log2(s / planted) if s > planted else 0.0) + 0.05 * (-1) ** i
          for i, s in enumerate(sizes)]
    k = find_knee(sizes, ys)
    assert k is not None and abs(math.log2(k[0] / planted)) <= 0.5 and k[2] > k[1] + 2
    assert find_knee(sizes, [3.0 + 2.0 * math.log2(s) for s in sizes]) is None
    refs = {"L1 iTLB reach 4K (128 x 4K)": 512 << 10}
    assert facts.nearest_reference(k[0], refs).startswith("L1 iTLB reach 4K")


def test_tlb_parse_and_references():
    text = ("tlb level=1 type=instruction page=4K entries=64 source=cpuid 0x80000005\n"
            "tlb level=1 type=data page=4K entries=72 source=cpuid 0x80000005\n"
            "tlb level=2 type=instruction page=2M entries=512 source=cpuid 0x80000006\n")
    tlbs = facts.parse_tlb(text)
    assert len(tlbs) == 3 and tlbs[0]["source"] == "cpuid 0x80000005"
    assert facts.references(tlbs, None) == {"L1 iTLB reach 4K (64 x 4K)": 256 << 10,
                                            "L2 iTLB reach 2M (512 x 2M)": 1 << 30}
    assert all(t["entries"] > 0 for t in facts.read_tlb())  # the real cpuid program


def test_config_errors_and_round_trip():
    with pytest.raises(PerflabError, match="size range is empty"):
        fe.FrontendConfig(min_bytes=1 << 20, max_bytes=1 << 16)
    with pytest.raises(PerflabError, match="page mode"):
        fe.FrontendConfig(modes=("1g",))
    cfg = fe.FrontendConfig(per_cpu=(0, 1), reps=4)
    assert fe.FrontendConfig.from_dict(cfg.as_dict()) == cfg


def test_plan_is_pure_seeded_and_keys_are_unique():
    cfg = fe.FrontendConfig(reps=3)
    a, b = fe.plan(cfg, _machine()), fe.plan(cfg, _machine())
    assert a == b and len(a) == 3 * 2 * len(cfg.sizes_n())
    keys = {(s.label, tuple(sorted(s.params.items()))) for s in a}
    assert len(keys) == len(a)
    assert [s.params["mode"] for s in a[:8]] != ["4k", "2m"] * 4  # shuffled


def _runs(cfg, planted, seed=1, counters=False, fail=()):
    specs = fe.plan(cfg, _machine())
    inner = model(planted, len(specs), random.Random(seed))

    def run(spec):
        res = inner(spec)
        if counters:  # iTLB misses grow past 128 x 4 KiB with 4 KiB pages only
            b, huge = spec.params["bytes"], spec.params["mode"] == "2m"
            itlb = 0.0 if huge or b <= 512 << 10 else 0.02 * math.log2(b / (512 << 10))
            res.counters = {"iTLB-load-misses": itlb * cfg.iters, "L1-icache-load-misses": 0.3 * cfg.iters}
        if (spec.params["bytes"], spec.params["mode"]) in fail:
            res.exit_code, res.signal = None, 11
        return res

    ex = MockExecutor(model=run)
    return [(dict(s.params), ex.run(s)) for s in specs]


def test_verdict_null_quiet_planted_found_with_counters():
    cfg = fe.FrontendConfig(perf_span=False)
    null = fe.analyse(cfg, _runs(cfg, planted=False))
    assert not any(r.helps for r in null.ratios)
    assert null.verdict.startswith("no evidence that 2 MiB text pages help")
    assert "iTLB" not in null.verdict.split(";")[0]
    assert all(r.ci.level > 0.95 and r.p_adjusted >= r.p_value for r in null.ratios)
    found = fe.analyse(cfg, _runs(cfg, planted=True, counters=True))
    helped = [r for r in found.ratios if r.helps]
    assert helped and min(r.bytes for r in helped) > 512 << 10
    assert found.verdict.startswith("2 MiB text pages run faster at")
    assert "fewer iTLB misses go with the gain" in found.verdict
    big = next(p for p in found.points if p.mode == "4k" and p.bytes > 3 << 20)
    assert big.itlb_per_dispatch == pytest.approx(0.02 * math.log2(big.bytes / (512 << 10)))
    # without counters the same data never names a cause it did not observe
    plain = fe.analyse(cfg, _runs(cfg, planted=True))
    assert "not observed" in plain.verdict and "instruction caches" not in plain.verdict


def test_failed_runs_are_left_out_and_all_failed_is_failed():
    cfg = fe.FrontendConfig(perf_span=False, reps=10)
    small = cfg.sizes_n()[0][0]
    res = fe.analyse(cfg, _runs(cfg, planted=False, fail={(small, "2m")}))
    p = next(p for p in res.points if p.bytes == small and p.mode == "2m")
    assert p.median_ns is None and p.failed == 10 and res.failures == {"killed by SIGSEGV": 10}
    assert all(r.bytes != small for r in res.ratios)
    every = {(b, m) for b, _ in cfg.sizes_n() for m in fe.MODES}
    assert fe.analyse(cfg, _runs(cfg, False, fail=every)).verdict.startswith("the scan failed")


def test_verdict_check_short():
    r = verdict_check(runs=15)
    assert r["false_positive"] <= 0.1 and r["detection"] >= 0.9


def test_snapshot_of_terminal_output():
    from rich.console import Console

    cfg = fe.FrontendConfig(min_bytes=128 << 10, max_bytes=2 << 20, perf_span=False)
    ctx = fe.Context(code_bytes=2 << 20, references={"L1 iTLB reach 4K (128 x 4K)": 512 << 10},
                     huge_method="thp-remap", huge_reason="2 MiB text pages: (test)",
                     counters_reason="iTLB and L1i misses counted with perf stat")
    result = fe.analyse(cfg, _runs(cfg, planted=True, counters=True), ctx)
    assert fe.FrontendResult.from_dict(result.as_dict()) == result
    console = Console(record=True, width=160, color_system=None)
    render(result, console)
    text = console.export_text()
    if os.environ.get("PERFLAB_UPDATE_SNAPSHOTS"):
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(text)
    assert text == SNAPSHOT.read_text()


def test_perfstat_recorded_outputs_and_absence_path():
    counters, unsupported = perfstat.parse((DATA / "kvm-no-pmu-perf6.1.csv").read_text())
    assert unsupported == ["iTLB-load-misses", "L1-icache-load-misses"]
    assert counters == {"task-clock": 0.79, "duration_time": 1230275.0}
    assert perfstat.per_unit(counters, "iTLB-load-misses", 1000) is None
    counters, unsupported = perfstat.parse((DATA / "kvm-no-pmu-interval-perf6.1.csv").read_text())
    assert unsupported == ["iTLB-load-misses"] and counters["page-faults"] == 71.0  # 63 + 8 over 11 intervals
    assert counters["task-clock"] == pytest.approx(321.92)
    counters, unsupported = perfstat.parse((DATA / "virtualbox-no-pmu-raptorjit159.csv").read_text())
    assert counters["page-faults"] == 40.0 and "instructions" in unsupported and len(unsupported) == 6
    assert perfstat.per_unit({"iTLB-load-misses": 4.0e4}, "iTLB-load-misses", 2e6) == pytest.approx(0.02)


def test_counters_asked_but_not_supported_say_so():
    cfg = fe.FrontendConfig(perf_span=False)
    ctx = fe.Context(counters_reason="iTLB and L1i misses counted with perf stat")
    res = fe.analyse(cfg, _runs(cfg, planted=False), ctx)
    assert "could not count iTLB-load-misses" in res.counters_reason
    assert any("could not count" in e for e in res.evidence)


def test_per_cpu_scan_tests_each_cpu_and_corrects_across_all():
    cfg = fe.FrontendConfig(min_bytes=256 << 10, max_bytes=4 << 20, per_cpu=(0, 1), perf_span=False)
    specs = fe.plan(cfg, _machine())
    assert {s.cpus for s in specs} == {(0,), (1,)} and len(specs) == 2 * 2 * 10 * len(cfg.sizes_n())
    planted = model(True, len(specs), random.Random(3))
    null = model(False, len(specs), random.Random(4))
    ex = MockExecutor(model=lambda s: (planted if s.params["cpu"] == 1 else null)(s))
    res = fe.analyse(cfg, [(dict(s.params), ex.run(s)) for s in specs])
    assert len(res.ratios) == 2 * len(cfg.sizes_n())  # Holm ran over both CPUs' sizes
    assert {r.cpu for r in res.ratios if r.helps} == {1}
    assert all(r.bytes > 512 << 10 for r in res.ratios if r.helps)
    assert res.verdict.startswith("2 MiB text pages run faster on CPU 1 at ") and "(CPU, size) pairs" in res.verdict


def test_one_page_mode_gives_no_verdict_on_2m():
    for modes in (("4k",), ("2m",)):
        cfg = fe.FrontendConfig(perf_span=False, modes=modes, reps=3)
        res = fe.analyse(cfg, _runs(cfg, planted=True))
        assert not res.ratios and "no verdict on 2 MiB pages" in res.verdict


def test_thp_never_gives_no_verdict_with_the_reason():
    cfg = fe.FrontendConfig(perf_span=False, reps=3)
    ctx = fe.Context(huge_reason="2 MiB text pages: THP is 'never' here; rerun with --allow-system-changes")
    runs = [(p, r) for p, r in _runs(cfg, planted=True) if p["mode"] == "4k"]
    res = fe.analyse(cfg, runs, ctx)
    assert res.verdict == ("no verdict on 2 MiB text pages: THP is 'never' here; rerun with "
                           "--allow-system-changes")
