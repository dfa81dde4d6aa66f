"""A variant's flags are read back from the program its project's build made: the compile
switches gcc records (-frecord-gcc-switches) and a build ID only a link with the variant's link
flags carries. A Makefile that drops them is tried with the next convention, then refused in one
line naming the template; a PGO note names only the trained program's profiles, whole."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from perflab.kernels.build import BuildError
from perflab.kernels.buildsys import DEFAULT_MAKE, profile_notes
from perflab.kernels.variant_build import build_variant
from perflab.kernels.variant_probe import RECORD, build_id, elf_sections, flags_trace, link_marker
from perflab.kernels.variants import BuildTarget, Variant

MYCFLAGS = Path(__file__).parents[1] / "data" / "mycflags"

pytestmark = pytest.mark.skipif(shutil.which("make") is None or shutil.which("gcc") is None,
                                reason="needs make and gcc")


def _gcc(tmp: Path, *flags: str) -> Path:
    src, exe = tmp / "p.c", tmp / "p"
    src.write_text("int main(void) { return 0; }\n")
    subprocess.run(["gcc", *flags, str(src), "-o", str(exe)], check=True)
    return exe


def test_the_recorded_compile_line_shows_a_flag_missing_overridden_or_there(tmp_path):
    o3 = Variant("o3", cflags=("-O3", "-ffast-math"))
    assert flags_trace(o3, _gcc(tmp_path, "-O3", "-ffast-math", RECORD), None) == ""
    # a Makefile that appends its own -O2 after the variant's flags
    assert "-O3 is overridden by a later -O2 on the compile line" in flags_trace(
        o3, _gcc(tmp_path, "-O3", "-ffast-math", "-O2", RECORD), None)
    assert "-ffast-math is not on the compile line" in flags_trace(o3, _gcc(tmp_path, "-O3", RECORD), None)
    assert flags_trace(o3, _gcc(tmp_path, "-O3"), None).startswith(
        "the compile flags did not reach the compiler (-frecord-gcc-switches")


def test_the_link_is_known_by_its_build_id(tmp_path):
    marker = link_marker("k")
    exe = _gcc(tmp_path, "-O2", RECORD, f"-Wl,--build-id=0x{marker}")
    assert build_id(elf_sections(exe, (".note.gnu.build-id",))[".note.gnu.build-id"]) == marker
    v = Variant("v", cflags=("-O2",), ldflags=("-Wl,-O1",))
    assert flags_trace(v, exe, marker) == ""
    assert flags_trace(v, _gcc(tmp_path, "-O2", RECORD), marker) == "the link flags (-Wl,-O1) did not reach the link"
    assert elf_sections(tmp_path / "p.c", (".text",)) is None  # not ELF: nothing to read


def _target(src: Path) -> BuildTarget:
    return BuildTarget("prog", template=DEFAULT_MAKE, src_dir=src, exe="prog")


def test_a_makefile_that_ignores_cflags_is_refused_in_one_line(tmp_path):
    src = tmp_path / "fixed"
    src.mkdir()
    (src / "main.c").write_text("int main(void) { return 0; }\n")
    (src / "Makefile").write_text("prog: main.c\n\tgcc -O2 -o prog main.c\n")
    with pytest.raises(BuildError) as exc:
        build_variant(_target(src), Variant("o3", cflags=("-O3",)), cache_dir=tmp_path / "cache")
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith("variant 'o3': the compile flags did not reach the compiler")
    assert "tried CFLAGS/LDFLAGS and MYCFLAGS/MYLDFLAGS" in msg
    assert """--build 'make -C {src} CC={cc} MYCFLAGS="{cflags}" MYLDFLAGS="{ldflags}" -j{jobs}'""" in msg
    assert re.search(r"full log: \S+build\.log$", msg)


def test_link_flags_a_makefile_drops_reach_it_through_mycflags(tmp_path):
    # the Lua-style fixture compiles with CFLAGS (so -O3 alone needs nothing more) and links
    # with MYLDFLAGS only
    o3 = build_variant(_target(MYCFLAGS), Variant("o3", cflags=("-O3",)), cache_dir=tmp_path / "cache")
    assert not o3.notes and "MYCFLAGS" not in " ".join(o3.command)
    linked = build_variant(_target(MYCFLAGS), Variant("o1link", cflags=("-O2",), ldflags=("-Wl,-O1",)),
                           cache_dir=tmp_path / "cache")
    assert any("MYCFLAGS/MYLDFLAGS" in n for n in linked.notes), linked.notes
    assert "MYLDFLAGS=" in " ".join(linked.command)


def test_a_pgo_note_names_only_the_trained_programs_profiles_whole(tmp_path):
    prof = tmp_path / ("profile-" + "x" * 150)
    (prof / "sub").mkdir(parents=True)
    (prof / "sub" / "lua.gcda").write_bytes(b"")
    luac = f"luac.c:725:1: warning: \u2018{prof}/#src#luac.gcda\u2019 profile count data file not found [-Wmissing-profile]"
    lua = f"lua.c:9:1: warning: \u2018{prof}/#src#lua.gcda\u2019 profile count data file not found [-Wmissing-profile]"
    log = f"gcc -c luac.c\n{luac}\ngcc -c lua.c\n{lua}\n"
    assert profile_notes(prof, log, {"#src#lua.gcda"}) == [
        f"profile did not apply everywhere (1 warning), e.g. {lua}"]
    assert profile_notes(prof, f"{luac}\n", {"#src#lua.gcda"}) == []


def _cmake_project(root: Path, extra: str = "") -> Path:
    root.mkdir()
    (root / "main.c").write_text("#include <stdio.h>\n#include <stdlib.h>\nint main(int c, char **v) {\n"
                                 "  long s = 0, n = c > 1 ? atol(v[1]) : 10;\n"
                                 "  for (long i = 0; i < n; i++) s += i % 7 ? i : -i;\n"
                                 "  printf(\"sum: %ld\\n\", s);\n  return 0;\n}\n")
    (root / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.13)\nproject(one C)\n"
                                         f"{extra}add_executable(one main.c)\n")
    return root


@pytest.mark.skipif(shutil.which("cmake") is None, reason="needs cmake")
def test_cmake_pgo_through_its_cache_variables_and_a_cmakelists_that_sets_them_is_refused(tmp_path):
    target = BuildTarget("one", template="cmake", src_dir=_cmake_project(tmp_path / "one"), exe="one")
    vb = build_variant(target, Variant("pgo", cflags=("-O2",), pgo=True), train_argv=("{exe}", "1000"),
                       train_cwd=tmp_path, cache_dir=tmp_path / "cache")
    assert list((vb.path.parents[1] / "profile").rglob("*.gcda")) and not vb.notes, vb.notes
    assert "'-DCMAKE_C_FLAGS=-O2 -fprofile-use=" in vb.log  # the optimised build's configure line
    # a CMakeLists.txt that sets CMAKE_C_FLAGS hides the cache variable: the read-back catches it
    fixed = BuildTarget("one", template="cmake", exe="one",
                        src_dir=_cmake_project(tmp_path / "fixed", 'set(CMAKE_C_FLAGS "-O1")\n'))
    with pytest.raises(BuildError) as exc:
        build_variant(fixed, Variant("o3", cflags=("-O3",)), cache_dir=tmp_path / "cache")
    msg = str(exc.value)
    assert msg.startswith("variant 'o3': the compile flags did not reach the compiler") and "\n" not in msg
    assert "CMAKE_C_FLAGS, CMAKE_CXX_FLAGS and CMAKE_EXE_LINKER_FLAGS" in msg
