"""Variants study: model, matrix expansion, probes, link-order trap, interleaving, checksum guard."""

from __future__ import annotations

from pathlib import Path

import pytest

from perflab.model import Workload
from perflab.errors import PerflabError
from perflab.measure.executor import MockExecutor
from perflab.model import MetricPattern, RunResult
from perflab.store import open_store
from perflab.studies import variants as vs
from perflab.studies.variant_build import (
    BuildTarget,
    Variant,
    VariantBuild,
    build_variant,
    check_link_order,
    expand_matrix,
    parse_variant,
)

KERNELS = Path(vs.__file__).resolve().parent.parent / "kernels" / "linkorder"


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    # one build cache for the module: the variants are built once and reused
    return tmp_path_factory.mktemp("variant-cache")


# -- model ----------------------------------------------------------------------------------


def test_matrix_expansion_is_the_exact_product():
    vs_ = expand_matrix(["abi=m64,m32", "opt=O2,O3"])
    assert [v.name for v in vs_] == ["m64-O2", "m64-O3", "m32-O2", "m32-O3"]
    assert vs_[0].cflags == ("-m64", "-O2")
    assert vs_[3].cflags == ("-m32", "-msse2", "-mfpmath=sse", "-O3")
    # without an opt axis every variant is built at the baseline's -O2
    ab = expand_matrix(["abi=m64,m32,mx32"])
    assert [(v.name, v.cflags) for v in ab] == [
        ("m64", ("-O2", "-m64")), ("m32", ("-O2", "-m32", "-msse2", "-mfpmath=sse")),
        ("mx32", ("-O2", "-mx32"))]
    three = expand_matrix(["lto=on,off pgo=on,off", "cc=gcc,clang"])
    assert len(three) == 8 and three[0].name == "lto-pgo-gcc"
    assert three[0].pgo and "-flto" in three[0].cflags and three[-1].compiler == "clang"


def test_matrix_and_variant_errors_say_how_to_fix():
    with pytest.raises(PerflabError, match="AXIS one of abi"):
        expand_matrix(["colour=red"])
    with pytest.raises(PerflabError, match="choose from O0"):
        expand_matrix(["opt=O9"])
    with pytest.raises(PerflabError, match="NAME='FLAGS'"):
        parse_variant("-O2")
    with pytest.raises(PerflabError, match="twice"):
        vs.resolve_baseline([Variant("a", ("-O2",)), Variant("a", ("-O3",))], None)
    with pytest.raises(PerflabError, match="not one of the variants"):
        vs.resolve_baseline([Variant("a", ("-O2",))], "b")


def test_parse_variant_splits_compile_link_pgo_and_compiler():
    v = parse_variant("x=cc=clang -O3 -march=native -lfoo -static pgo")
    assert v.compiler == "clang" and v.pgo and v.cflags == ("-O3", "-march=native", "-static")
    assert v.ldflags == ("-lfoo",) and v.driver("c++") == "clang++"
    lo = parse_variant("bad=-O2 -L/x -lmopt {src} -lm")
    assert lo.link_line == ("-L/x", "-lmopt", "{src}", "-lm") and lo.cflags == ("-O2",)


def test_baseline_defaults_to_m64_O2_and_is_added_when_missing():
    vars_, base = vs.resolve_baseline(expand_matrix(["abi=m64,m32"]), None)
    assert base == "m64" and len(vars_) == 2
    vars_, base = vs.resolve_baseline([parse_variant("lto=-O2 -flto")], None)
    assert base == "base" and vars_[0].cflags == ("-O2", "-m64")


# -- probes ---------------------------------------------------------------------------------


def test_x32_probe_says_not_supported_by_this_kernel(cache):
    """This VM's kernel has no CONFIG_X86_X32_ABI: the x32 build links, the run is refused."""
    v = Variant("mx32", ("-O2", "-mx32"))
    before = vs.default_probe(v, None)  # refused before building: nothing to gain from the build
    assert not before.available and "not supported by this kernel" in before.reason
    target = BuildTarget("sinloop", (KERNELS / "sinloop.c",), "c", ldflags=("-lm",))
    vb = build_variant(target, v, cache_dir=cache)
    p = vs.default_probe(v, vb)
    assert not p.available
    assert "not supported by this kernel (CONFIG_X86_X32_ABI not set)" in p.reason, p.reason
    m64 = vs.default_probe(Variant("m64", ("-O2", "-m64")), vb)
    assert m64.available, m64.reason


def test_missing_compiler_is_skipped_in_one_line(tmp_path):
    p = vs.default_probe(Variant("icc", ("-O2",), compiler="no-such-cc"), None)
    assert not p.available and "no-such-cc not installed" in p.reason


# -- real builds of a small C program -------------------------------------------------------


def test_small_c_program_under_several_variants_with_sizes_and_cache(cache):
    target = BuildTarget("sinloop", (KERNELS / "sinloop.c",), "c", ldflags=("-lm",))
    names = []
    for spec in ("O0=-O0", "O2=-m64 -O2", "m32=-m32 -msse2 -mfpmath=sse -O2", "static=-O2 -static",
                 "clang=cc=clang -O2"):
        v = parse_variant(spec)
        vb = build_variant(target, v, cache_dir=cache)
        assert vb.path.exists() and vb.sizes is not None and vb.sizes.text > 0
        names.append((v.name, vb))
    sizes = {n: vb.sizes for n, vb in names}
    assert sizes["static"].text > 10 * sizes["O2"].text  # libc linked in
    again = build_variant(target, parse_variant("O2=-m64 -O2"), cache_dir=cache)
    assert again.cached and again.path == dict(names)["O2"].path


def test_pgo_two_phase_build_applies_the_profile(cache):
    target = BuildTarget("sinloop", (KERNELS / "sinloop.c",), "c", ldflags=("-lm",))
    vb = build_variant(target, parse_variant("pgo=-O2 pgo"), train_argv=("{exe}", "200000"), cache_dir=cache)
    assert not vb.cached and vb.path.exists()
    assert "-fprofile-use" in vb.command
    assert not [n for n in vb.notes if "did not apply" in n], vb.notes
    assert build_variant(target, parse_variant("pgo=-O2 pgo"), train_argv=("{exe}", "200000"),
                         cache_dir=cache).cached


# -- link-order trap ------------------------------------------------------------------------


def test_link_order_trap_detected_on_a_real_misordered_line(cache):
    target, wl, (good, bad) = vs.linkorder_demo(cache_dir=cache)
    gb = build_variant(target, good, cache_dir=cache)
    bb = build_variant(target, bad, cache_dir=cache)
    assert gb.notes == []
    assert len(bb.notes) == 1 and "-lmopt" in bb.notes[0] and "sin" in bb.notes[0]
    issues = check_link_order(bb.command)
    assert issues[0].symbols == ("sin",) and issues[0].resolved_from == "-lm"
    # and the consequence is real: the misordered binary takes sin from libm, not the archive
    import subprocess

    def sin_defined(p):
        out = subprocess.run(["nm", str(p)], capture_output=True, text=True).stdout
        return any(line.split()[-2:] == ["T", "sin"] for line in out.splitlines() if line.strip())

    assert sin_defined(gb.path) and not sin_defined(bb.path)


# -- the study through the MockExecutor -----------------------------------------------------


def _fake_builder(target, v, train_argv=(), cache_dir=None):
    return VariantBuild(v, Path(f"/fake/{v.name}"), cached=True, command=("cc",))


def _ok_probe(v, vb):
    return vs.VariantProbe(True)


class _CountingModel:
    def __init__(self):
        self.i = 0

    def __call__(self, spec):
        self.i += 1
        name = Path(spec.argv[0]).name
        secs = {"fast": 0.8, "m32": 1.02, "x32": 0.98}.get(name, 1.0) * (1 + (self.i % 5) * 0.002)
        rss = {"m32": 80_000, "x32": 82_000}.get(name, 100_000)
        return RunResult(wall_ns=int(secs * 1e9), user_s=secs, sys_s=0.0, maxrss_kb=rss, minflt=rss // 4,
                         majflt=0, nvcsw=0, nivcsw=0, exit_code=0,
                         metrics={"events_per_s": 100 / secs, "checksum": 7.5 if name == "fast" else 42.0})


def _config(variants, rounds=6, **kw):
    wl = Workload(name="w", argv=("{exe}", "--events", "10"),
                  metrics=(MetricPattern(r"x"),), primary_metric="events_per_s", checksum_metric="checksum")
    target = BuildTarget("w", (KERNELS / "sinloop.c",), "c")
    return vs.VariantsConfig(target=target, workload=wl, variants=tuple(variants), rounds=rounds, **kw)


def test_interleaving_each_round_runs_every_variant_once_in_seeded_shuffled_order(tmp_path):
    variants = [parse_variant(s) for s in ("m64=-m64 -O2", "m32=-m32 -O2", "fast=-O2 -ffast-math")]
    ex = MockExecutor(model=_CountingModel())
    store = open_store(str(tmp_path / "v.db"))
    res = vs.run_variants(_config(variants, rounds=6, warmup=1, seed=3), ex, store,
                          probe=_ok_probe, builder=_fake_builder)
    names = [Path(s.argv[0]).name for s in ex.calls]
    assert len(names) == 3 * 7  # one warm-up round + 6 rounds
    rounds = [names[i:i + 3] for i in range(0, len(names), 3)]
    assert all(sorted(r) == ["fast", "m32", "m64"] for r in rounds)
    assert len({tuple(r) for r in rounds}) > 1  # shuffled, not a fixed order
    assert res.order == rounds[1:]
    again = vs.run_variants(_config(variants, rounds=6, warmup=1, seed=3), MockExecutor(model=_CountingModel()),
                            store, probe=_ok_probe, builder=_fake_builder)
    assert again.order == res.order  # seeded
    # every measured run is in the store, labelled by variant
    ms = store.measurements(res.campaign_id)
    assert len(ms) == 18 and {m.label for m in ms} == {"m64", "m32", "fast"}
    camp = store.campaign(res.campaign_id)
    assert camp.status == "done" and camp.summary["baseline"] == "m64"


def test_ratios_verdicts_and_checksum_guard(tmp_path):
    variants = [parse_variant(s) for s in ("m64=-m64 -O2", "m32=-m32 -O2", "fast=-O2 -ffast-math")]
    res = vs.run_variants(_config(variants, rounds=8), MockExecutor(model=_CountingModel()),
                          open_store(str(tmp_path / "v.db")), probe=_ok_probe, builder=_fake_builder)
    m32, fast, base = res.row("m32"), res.row("fast"), res.row("m64")
    assert base.verdict == "baseline" and base.checksum_ok
    assert m32.rss_ratio[0] == pytest.approx(0.8) and m32.rss_significant
    assert "physical memory -20.0 %" in m32.verdict
    assert fast.time_ratio[0] == pytest.approx(0.8, rel=0.02) and fast.time_significant
    assert fast.time_p is not None and fast.time_p < 0.05
    # fast-math changed the checksum: flagged, reported as expected, and still measured
    assert fast.checksum_ok is False and fast.status == "measured"
    assert any("checksum differs" in n and "expected with -ffast-math" in n for n in fast.notes)
    assert m32.checksum_ok is True


def test_x32_supported_path_through_a_probe_stub(tmp_path):
    """Where a kernel runs x32, the x32 variant is measured like any other."""
    variants = expand_matrix(["abi=m64,mx32"])
    seen = []

    def probe(v, vb):
        seen.append((v.name, vb is not None))
        return vs.VariantProbe(True)

    def builder(target, v, train_argv=(), cache_dir=None):
        return VariantBuild(v, Path("/fake") / ("x32" if v.abi == "mx32" else "m64"), True, ("cc",))

    res = vs.run_variants(_config(variants), MockExecutor(model=_CountingModel()),
                          open_store(str(tmp_path / "v.db")), probe=probe, builder=builder)
    assert ("mx32", True) in seen and res.skipped == []
    x = res.row("mx32")
    assert x.status == "measured" and x.rss_ratio[0] == pytest.approx(0.82)


def test_unsupported_variant_is_skipped_in_one_line_and_the_rest_measured(tmp_path):
    variants = expand_matrix(["abi=m64,mx32"])

    def probe(v, vb):
        if v.abi == "mx32" and vb is not None:
            return vs.VariantProbe(False, "cannot run -mx32: exec format error: x32 is not supported by "
                                   "this kernel (CONFIG_X86_X32_ABI not set)")
        return vs.VariantProbe(True)

    ex = MockExecutor(model=_CountingModel())
    lines = []

    class Console:
        def print(self, *a, **k):
            lines.append(" ".join(map(str, a)))

    res = vs.run_variants(_config(variants, rounds=3), ex, open_store(str(tmp_path / "v.db")),
                          console=Console(), probe=probe, builder=_fake_builder)
    assert res.skipped == ["mx32"] and res.row("mx32").status == "skipped"
    assert all(Path(s.argv[0]).name == "m64" for s in ex.calls)
    assert any(line.startswith("mx32: skipped: cannot run -mx32") for line in lines)
