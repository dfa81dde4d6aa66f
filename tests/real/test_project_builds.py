"""Projects built by their own Makefile: PGO through --build make reaches a Lua-style Makefile
(MYCFLAGS/MYLDFLAGS) or says in one line which template would, and a failed build names its
command, its directory, the first error: line and the full log."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perflab.kernels.build import BuildError
from perflab.kernels.buildsys import DEFAULT_MAKE, log_summary
from perflab.kernels.variant_build import build_variant
from perflab.kernels.variants import BuildTarget, Variant

MYCFLAGS = Path(__file__).parents[1] / "data" / "mycflags"
PGO = Variant("pgo", cflags=("-O2",), pgo=True)

pytestmark = pytest.mark.skipif(shutil.which("make") is None or shutil.which("gcc") is None,
                                reason="needs make and gcc")


def _target(src: Path) -> BuildTarget:
    return BuildTarget("prog", template=DEFAULT_MAKE, src_dir=src, exe="prog")


def test_pgo_with_default_make_reaches_a_mycflags_makefile(tmp_path):
    vb = build_variant(_target(MYCFLAGS), PGO, train_argv=("{exe}", "20000"), train_cwd=tmp_path,
                       cache_dir=tmp_path / "cache")
    assert list((vb.path.parents[1] / "profile").rglob("*.gcda")), "the training wrote no profile"
    assert any("MYCFLAGS/MYLDFLAGS" in n for n in vb.notes), vb.notes
    assert not any("did not apply" in n for n in vb.notes), vb.notes
    assert "MYLDFLAGS=" in " ".join(vb.command)
    assert subprocess.run([str(vb.path), "10"], capture_output=True, text=True).stdout.startswith("sum: ")


def test_a_makefile_no_convention_reaches_names_the_template(tmp_path):
    src = tmp_path / "own"
    shutil.copytree(MYCFLAGS, src)
    mk = src / "Makefile"
    # flags only through the project's own OURCFLAGS/OURLDFLAGS: neither convention reaches
    mk.write_text(mk.read_text().replace("$(CFLAGS) $(MYCFLAGS)", "-O2 $(OURCFLAGS)").replace("MYLDFLAGS", "OURLDFLAGS"))
    with pytest.raises(BuildError) as exc:
        build_variant(_target(src), PGO, train_argv=("{exe}", "100"), train_cwd=tmp_path,
                      cache_dir=tmp_path / "cache")
    msg = str(exc.value)
    assert "\n" not in msg
    assert msg.startswith("PGO variant 'pgo': the instrumented program wrote no profile data (no .gcda "
                          "after training): -fprofile-generate reached neither the compile nor the link")
    assert "tried CFLAGS/LDFLAGS and MYCFLAGS/MYLDFLAGS" in msg
    assert """--build 'make -C {src} CC={cc} MYCFLAGS="{cflags}" MYLDFLAGS="{ldflags}" -j{jobs}'""" in msg
    assert re.search(r"full log: \S+build\.log$", msg)


def test_a_failed_build_names_command_directory_first_error_and_log(tmp_path):
    src = tmp_path / "broken"
    shutil.copytree(MYCFLAGS, src)
    (src / "work.c").write_text("long work(long n) { return n + undefined_thing; }\n")
    with pytest.raises(BuildError) as exc:
        build_variant(_target(src), Variant("base", cflags=("-O2",)), cache_dir=tmp_path / "cache")
    msg = str(exc.value)
    assert re.search(r"work.c:1:\d+: error: .undefined_thing. undeclared", msg)
    assert "command: make -C " in msg and re.search(r"\(in \S+\)", msg)
    log = Path(re.search(r"full log: (\S+build\.log)", msg).group(1))
    assert log.is_file() and "undefined_thing" in log.read_text()


def test_log_summary_prefers_the_linkers_reason_to_makes_error_line():
    log = ("gcc -o prog main.o\n/usr/bin/ld: main.o: in function `main':\n"
           "main.c:(.text+0x1): undefined reference to `__gcov_init'\n"
           "collect2: error: ld returned 1 exit status\nmake: *** [Makefile:9: prog] Error 1\n")
    assert log_summary(log).startswith("main.c:(.text+0x1): undefined reference to `__gcov_init'")


def test_variants_cli_pgo_with_default_make(tmp_path):
    env = {**os.environ, "PERFLAB_CACHE": str(tmp_path / "cache"), "COLUMNS": "200"}
    p = subprocess.run([sys.executable, "-m", "perflab", "variants", "--build", "make", "--src", str(MYCFLAGS),
                        "--exe", "prog", "-V", "o2=-O2", "-V", "pgo=pgo -O2", "--rounds", "2", "--warmup", "0",
                        "--energy", "off", "--db", str(tmp_path / "v.db"), "--json", str(tmp_path / "v.json"),
                        "--", "{exe}", "20000"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "pgo: built" in p.stdout + p.stderr
    assert "cannot build" not in p.stdout + p.stderr
    assert not list(tmp_path.glob("*.gcda"))
    assert json.loads((tmp_path / "v.json").read_text())["result"]
