"""Variants built for real: the x32 probe, a small C program under several variants with its sizes
and build cache, PGO trained in the user's directory, the link-order trap on a real misordered line."""

from __future__ import annotations

import subprocess

import pytest

from perflab.errors import PerflabError
from perflab.kernels.linkorder import check_link_order, linkorder_demo
from perflab.kernels.variant_build import build_variant
from perflab.kernels.variant_probe import default_probe
from perflab.kernels.variants import BuildTarget, Variant, parse_variant
from tests.studies.test_variants import KERNELS


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    # one build cache for the module: the variants are built once and reused
    return tmp_path_factory.mktemp("variant-cache")


def test_x32_probe_says_not_supported_by_this_kernel(cache):
    """This VM's kernel has no CONFIG_X86_X32_ABI: the x32 build links, the run is refused."""
    v = Variant("mx32", ("-O2", "-mx32"))
    before = default_probe(v, None)  # refused before building: nothing to gain from the build
    assert not before.available and "not supported by this kernel" in before.reason
    target = BuildTarget("sinloop", (KERNELS / "sinloop.c",), "c", ldflags=("-lm",))
    p = default_probe(v, build_variant(target, v, cache_dir=cache))
    assert not p.available and "(CONFIG_X86_X32_ABI not set)" in p.reason, p.reason
    assert default_probe(Variant("m64", ("-O2", "-m64")), None).available
    assert "no-such-cc not installed" in default_probe(Variant("i", ("-O2",), compiler="no-such-cc"), None).reason


def test_small_c_program_under_several_variants_with_sizes_and_cache(cache):
    target = BuildTarget("sinloop", (KERNELS / "sinloop.c",), "c", ldflags=("-lm",))
    built = {}
    for spec in ("O0=-O0", "O2=-m64 -O2", "m32=-m32 -msse2 -mfpmath=sse -O2", "static=-O2 -static",
                 "clang=cc=clang -O2"):
        v = parse_variant(spec)
        vb = build_variant(target, v, cache_dir=cache)
        assert vb.path.exists() and vb.sizes is not None and vb.sizes.text > 0
        built[v.name] = vb
    assert built["static"].sizes.text > 10 * built["O2"].sizes.text  # libc linked in
    again = build_variant(target, parse_variant("O2=-m64 -O2"), cache_dir=cache)
    assert again.cached and again.path == built["O2"].path


def test_pgo_trains_in_the_users_directory_with_a_relative_path(cache, tmp_path):
    """The training command names a file relative to where the user is; the
    profile goes to the build's own directory, none to the working directory."""
    src = tmp_path / "reader.c"
    src.write_text('#include <stdio.h>\nint main(int c, char **v) { FILE *f = fopen(v[1], "r");\n'
                   '  if (!f) { perror(v[1]); return 1; } long n = 0, x; while (fscanf(f, "%ld", &x) == 1)\n'
                   '  for (long i = 0; i < x; i++) n += i % 7; printf("checksum %ld\\n", n); return 0; }\n')
    work = tmp_path / "work"
    work.mkdir()
    (work / "train.txt").write_text("200000 300000\n")
    target = BuildTarget("reader", (src,), "c")
    with pytest.raises(PerflabError, match="PGO training run failed in .*No such file"):
        build_variant(target, parse_variant("pgo=-O2 pgo"), train_argv=("{exe}", "train.txt"),
                      train_cwd=tmp_path, cache_dir=cache)
    vb = build_variant(target, parse_variant("pgo=-O2 pgo"), train_argv=("{exe}", "train.txt"),
                       train_cwd=work, cache_dir=cache)
    assert "-fprofile-use=" + str(vb.path.parent / "profile") in vb.command
    assert list((vb.path.parent / "profile").rglob("*.gcda")) and not list(work.rglob("*.gcda"))
    assert not [n for n in vb.notes if "did not apply" in n], vb.notes
    assert build_variant(target, parse_variant("pgo=-O2 pgo"), train_argv=("{exe}", "train.txt"),
                         train_cwd=work, cache_dir=cache).cached


def test_link_order_trap_detected_on_a_real_misordered_line(cache):
    target, wl, (good, bad) = linkorder_demo(cache_dir=cache)
    gb, bb = build_variant(target, good, cache_dir=cache), build_variant(target, bad, cache_dir=cache)
    assert gb.notes == []
    assert len(bb.notes) == 1 and "-lmopt" in bb.notes[0] and "sin" in bb.notes[0]
    issues = check_link_order(bb.command)
    assert issues[0].symbols == ("sin",) and issues[0].resolved_from == "-lm"

    def sin_defined(p):  # and the consequence is real: the misordered binary takes libm's sin
        out = subprocess.run(["nm", str(p)], capture_output=True, text=True).stdout
        return any(line.split()[-2:] == ["T", "sin"] for line in out.splitlines() if line.strip())

    assert sin_defined(gb.path) and not sin_defined(bb.path)
