"""perflab frontend: generated code sizes, huge-text remap, knee wrapper, end-to-end scans."""

from __future__ import annotations

import math
import re
import subprocess

import pytest

from perflab.errors import PerflabError
from perflab.kernels.frontend.generate import KINDS, build_program, code_layout
from perflab.measure.executor import MockExecutor, RealExecutor
from perflab.model import RunResult
from perflab.store import open_store
from perflab.studies import frontend as fe


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("size", [24 << 10, 300 << 10])
def test_generated_code_has_requested_size(kind, size):
    prog, built = build_program(kind, size)
    layout = code_layout(built.path, prog)  # nm -S of the built binary
    assert abs(layout.total_bytes - size) <= 0.10 * size, (layout.total_bytes, size)
    # hot code grows linearly with n
    assert layout.hot_bytes(prog.cases // 2) == pytest.approx(layout.total_bytes / 2, rel=0.01)
    out = subprocess.run([str(built.path), str(prog.cases), "20000"], capture_output=True, text=True, check=True)
    assert f"kind={kind} n={prog.cases}" in out.stdout
    # the same opcodes give the same result whatever the page mode
    huge = subprocess.run([str(built.path), str(prog.cases), "20000", "--huge"], capture_output=True, text=True)
    if huge.returncode == 0:
        assert out.stdout.split("checksum=")[1] == huge.stdout.split("checksum=")[1]


def test_bad_n_is_refused():
    prog, built = build_program("switch", 16 << 10)
    out = subprocess.run([str(built.path), str(prog.cases + 1), "10"], capture_output=True, text=True)
    assert out.returncode == 2 and "N must be in 1.." in out.stderr


def test_huge_text_remap_verified_in_smaps():
    if fe.thp_mode() in (None, "never"):
        pytest.skip("THP unavailable or 'never' on this machine")
    prog, built = build_program("switch", 64 << 10)
    out = subprocess.run([str(built.path), "10", "1000", "--huge"], capture_output=True, text=True, check=True)
    kb = int(re.search(r"huge_text_kb=(-?\d+)", out.stdout).group(1))
    assert kb >= 2048  # AnonHugePages of the text mapping as /proc/self/smaps shows it
    plain = subprocess.run([str(built.path), "10", "1000"], capture_output=True, text=True, check=True)
    assert "huge_text_kb=0" in plain.stdout


def _geometric(n=15, lo=16 << 10, hi=4 << 20):
    return [round(lo * (hi / lo) ** (i / (n - 1))) for i in range(n)]


def test_knee_detector_finds_planted_knee():
    sizes = _geometric()
    planted = 512 << 10
    ys = [10.0 + (3.0 * math.log2(s / planted) if s > planted else 0.0) + 0.05 * ((-1) ** i)
          for i, s in enumerate(sizes)]
    k = fe.find_knee(sizes, ys)
    assert k is not None
    assert abs(math.log2(k[0] / planted)) <= 0.5  # within one geometric step
    assert k[2] > k[1] + 2  # steeper after
    refs = {"L1 iTLB reach 4K (128 x 4K)": 512 << 10, "L2 cache": 1 << 20}
    assert fe.nearest_reference(k[0], refs).startswith("L1 iTLB reach 4K (128 x 4K)")


def test_knee_detector_finds_none_in_flat_or_linear_data():
    sizes = _geometric()
    flat = [20.0 + 0.2 * ((i * 7) % 5 - 2) for i in range(len(sizes))]
    assert fe.find_knee(sizes, flat) is None
    assert fe.find_knee(sizes, [5.0] * len(sizes)) is None
    line = [3.0 + 2.0 * math.log2(s) for s in sizes]
    assert fe.find_knee(sizes, line) is None


def test_tlb_parse_and_references():
    text = ("vendor=AuthenticAMD\n"
            "tlb level=1 type=instruction page=4K entries=64 source=cpuid 0x80000005\n"
            "tlb level=1 type=data page=4K entries=72 source=cpuid 0x80000005\n"
            "tlb level=2 type=instruction page=2M entries=512 source=cpuid 0x80000006\n")
    tlbs = fe.parse_tlb(text)
    assert len(tlbs) == 3 and tlbs[0]["entries"] == 64 and tlbs[0]["source"] == "cpuid 0x80000005"
    refs = fe.references(tlbs, None)
    assert refs == {"L1 iTLB reach 4K (64 x 4K)": 256 << 10, "L2 iTLB reach 2M (512 x 2M)": 1 << 30}
    assert fe.nearest_reference(8 << 20, refs) is None  # nothing within a factor of 2
    live = fe.read_tlb()  # the real cpuid program
    assert all(t["entries"] > 0 for t in live)


def test_config_errors():
    with pytest.raises(PerflabError, match="size range is empty"):
        fe.FrontendConfig(min_bytes=1 << 20, max_bytes=1 << 16)
    with pytest.raises(PerflabError, match="page mode"):
        fe.FrontendConfig(modes=("1g",))
    assert fe.FrontendConfig(min_bytes=16 << 10, max_bytes=4 << 20, points_per_octave=1).sizes()[-1] == 4 << 20


def test_cli_bad_size_exits_2():
    from perflab.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["frontend", "--max-size", "lots"])
    assert exc.value.code == 2


def _model(knee_bytes):
    """Mock runtime: flat, then +4 ns per doubling beyond knee_bytes in 4k mode; flat in 2m mode."""
    per_case = {}

    def model(spec):
        n = int(spec.argv[1])
        huge = "--huge" in spec.argv
        b = n * per_case.setdefault("b", 65)
        ns = 30.0 + (0.0 if huge or b <= knee_bytes else 4.0 * math.log2(b / knee_bytes))
        return RunResult(wall_ns=10_000_000, user_s=0.01, sys_s=0.0, maxrss_kb=1, minflt=1, majflt=0,
                         nvcsw=0, nivcsw=0, exit_code=0,
                         metrics={"ns_per_iter": ns, "seconds": 0.01, "huge_text_kb": 4096.0 if huge else 0.0})

    return model


def test_scan_with_mock_executor_finds_knee_in_4k_only(tmp_path):
    if fe.thp_mode() in (None, "never"):
        pytest.skip("THP unavailable: the 2 MiB mode is refused before any run")
    cfg = fe.FrontendConfig(min_bytes=16 << 10, max_bytes=4 << 20, points_per_octave=2, reps=3,
                            perf_span=False)
    store = open_store(str(tmp_path / "fe.db"))
    ex = MockExecutor(model=_model(512 << 10))
    res = fe.run_frontend(cfg, ex, store)
    k4 = next(k for k in res.knees if k.mode == "4k")
    k2 = next(k for k in res.knees if k.mode == "2m")
    assert k4.knee_bytes is not None and abs(math.log2(k4.knee_bytes / (512 << 10))) <= 0.5
    assert k2.knee_bytes is None
    assert res.huge_method == "thp-remap"
    # every (size, mode, rep) recorded, the order shuffled per round
    assert len(store.measurements(res.campaign_id)) == len(cfg.sizes()) * 2 * 3
    big = [r for r in res.ratios if r.bytes > 1 << 20]
    assert big and all(r.ratio > 1.1 for r in big)
    assert "iTLB misses cost time" in res.verdict


def test_end_to_end_scan_both_page_modes(tmp_path):
    from rich.console import Console

    cfg = fe.FrontendConfig(min_bytes=16 << 10, max_bytes=256 << 10, points_per_octave=1,
                            iters=100_000, reps=2)
    store = open_store(str(tmp_path / "fe.db"))
    res = fe.run_frontend(cfg, RealExecutor(), store)
    modes = {p.mode for p in res.points}
    assert "4k" in modes
    if "2m" in modes:
        assert res.huge_method and all(p.huge_kb and p.huge_kb >= 2048 for p in res.points if p.mode == "2m")
    else:
        assert any("2 MiB text pages" in n for n in res.notes)  # the one-line reason
    assert len([p for p in res.points if p.mode == "4k"]) == 5
    console = Console(record=True, width=200)
    fe.render(res, console)
    text = console.export_text()
    assert re.search(r"knee \(4k pages\): (no knee in range|\d)", text)
    assert "L1i cache" in text or "iTLB" in text
    spans = [p.span_bytes for p in res.points if p.span_bytes]
    if spans:  # perf works: the sampled span tracks the symbol-table size
        p = max((p for p in res.points if p.span_bytes), key=lambda p: p.bytes)
        assert 0.7 * p.bytes <= p.span_bytes <= 1.3 * p.bytes
    assert store.campaign(res.campaign_id).status == "done"
