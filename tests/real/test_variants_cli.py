"""End-to-end `perflab variants` with real compilers, make and CMake: minihlt's own builds on every
variant axis, fast-math's different result, PGO training with a relative path, bad input, and a
kill -9 in the middle of a campaign followed by resume."""

from __future__ import annotations

import json
import os
import shlex
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from perflab.cli import main
from perflab.kernels import minihlt
from perflab.kernels.buildsys import fill_template
from perflab.kernels.variant_build import build_variant
from perflab.kernels.variant_probe import default_probe
from perflab.kernels.variants import AXES, BuildTarget, expand_matrix
from perflab.store import open_store

FMSUM = Path(__file__).parents[1] / "data" / "fmsum"
PERFLAB = [sys.executable, "-m", "perflab"]


def _cli(args, tmp_path, cwd=None, cache=None):
    env = {**os.environ, "PERFLAB_CACHE": str(cache or tmp_path / "cache"), "COLUMNS": "200"}
    return subprocess.run([*PERFLAB, *args], capture_output=True, text=True, env=env, cwd=cwd or tmp_path,
                          timeout=600)


def _one_line_error(proc, start):
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"perflab: error: {start}"), proc.stderr
    return lines[0]


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    """One build cache for the file: perflab's own helpers (the static spawn server, the ABI
    probes) are built once, not once a test. Every build is keyed by its sources, flags, compiler
    and (PGO) training directory, so no test is handed another's program: each builds its own."""
    return tmp_path_factory.mktemp("variants-cli-cache")


# -- every variant axis through minihlt's own Makefile and CMakeLists.txt --------------------


def _elf(path: Path) -> tuple[int, int]:
    """(ELF class: 1 = 32-bit, 2 = 64-bit; e_machine: 3 = i386, 62 = x86-64)."""
    head = path.read_bytes()[:20]
    return head[4], int.from_bytes(head[18:20], "little")


def _readelf(*args: str) -> str:
    return subprocess.run(["readelf", *args], capture_output=True, text=True).stdout


# CMake: one value for each way a value reaches the build (kernels/buildsys.py): compile flags
# alone (g, whose debug info is checked), compile and link flags (m32, lto), link flags alone
# (static), the compiler (clang), two phases (pgo). O0, native, fastmath and fma pass as g does
# (CMAKE_C_FLAGS / CMAKE_CXX_FLAGS), and make builds them all; four CMake builds fewer.
CMAKE_ONE_PER_AXIS = {"m32", "g", "lto", "pgo", "static", "clang"}
# make: the values whose binary has something of its own to check (ELF class, no interpreter,
# debug info, the compiler's comment, a profile), and one other value of opt, march and
# fpcontract; the values between (O1, Os, Ofast, v2, ...) are passed the same way (11 builds of
# 24). fast-math, whose result differs, is built by both systems in the test below.
MAKE_CHECKED = {"m32", "mx32", "O3", "g", "v3", "lto", "pgo", "fma", "static", "staticcxx", "clang"}


def _axis_variants(per_axis: int | None = None):
    """Every value of every axis once; ``per_axis``: at most that many new builds an axis."""
    seen, out = set(), []
    for axis, values in AXES.items():
        taken = 0
        for v in expand_matrix([f"{axis}={','.join(values)}"]):
            key = (v.cflags, v.compiler, v.pgo)
            if key not in seen and (per_axis is None or taken < per_axis):
                seen.add(key)
                out.append(v)
                taken += 1
    return out


@pytest.mark.slow
@pytest.mark.timeout(1800)  # 10-13 builds of minihlt per build system on a shared 2-CPU machine
@pytest.mark.parametrize("system", ["make", "cmake"])
def test_every_axis_builds_minihlt_with_its_own_build_system(system, shared_cache, tmp_path):
    """abi, opt, debug, march, lto, pgo, fastmath, fpcontract, link, cc: each value built by real
    make / CMake from minihlt's own files; what each flag should do is checked in the binary, and
    every build this machine can run prints the same checksum as the -O2 build."""
    template = minihlt.MAKE_TEMPLATE if system == "make" else "cmake"
    target = BuildTarget("minihlt", template=template, src_dir=minihlt.HERE, exe="minihlt")
    train = ("{exe}", "--events", "4", "--static-mb", "4", "--seed", "9")
    checksums, checked = {}, set()
    # Each build system passes the flags of every value of an axis the same way: make builds
    # MAKE_CHECKED, CMake one value of each axis that changes how it compiles or links.
    wanted = MAKE_CHECKED if system == "make" else CMAKE_ONE_PER_AXIS
    for v in [v for v in _axis_variants() if v.name in wanted]:
        if not default_probe(v, None).available and v.abi != "mx32":
            continue
        vb = build_variant(target, v, train_argv=train, train_cwd=tmp_path, cache_dir=shared_cache)
        log = Path(vb.log_path).read_text()
        for flag in v.cflags:  # the variant's flags reached the compiler through the build system
            assert flag in log, (v.name, flag)
        exe = vb.path
        cls, machine = _elf(exe)
        if v.abi == "m32":
            assert (cls, machine) == (1, 3) and "mfpmath=sse" in log
        elif v.abi == "mx32":
            assert (cls, machine) == (1, 62)
        else:
            assert (cls, machine) == (2, 62)
        if "-static" in v.cflags:
            assert "INTERP" not in _readelf("-l", str(exe))
        if "-static-libstdc++" in v.cflags:
            assert "libstdc++" not in _readelf("-d", str(exe))
        if "-g" in v.cflags:
            assert ".debug_info" in _readelf("-S", str(exe))
        if v.compiler == "clang":
            assert "clang" in _readelf("-p", ".comment", str(exe))
        if v.pgo:
            assert list((vb.path.parents[1] / "profile").rglob("*.gcda")), "no profile in the build's directory"
            assert not list(tmp_path.rglob("*.gcda")) and not vb.notes, vb.notes
        checked.add(v.name)
        if not default_probe(v, vb).available:
            continue
        out = subprocess.run([str(exe), "--events", "3", "--static-mb", "4"], capture_output=True, text=True)
        assert out.returncode == 0, (v.name, out.stderr)
        checksums[v.name] = next(ln for ln in out.stdout.splitlines() if ln.startswith("checksum:"))
    assert wanted <= checked
    assert len(set(checksums.values())) == 1, checksums  # minihlt's checksum is exact across builds
    again = build_variant(target, expand_matrix(["abi=m32"])[0], cache_dir=shared_cache)
    assert again.cached


# -- the study from the command line ---------------------------------------------------------


@pytest.mark.parametrize("system", ["make", "cmake"])
def test_fast_math_is_a_different_result_and_never_the_fastest(system, shared_cache, tmp_path):
    """Seed 003: fast-math vectorises the float sum: faster here, but another checksum."""
    (tmp_path / "train.txt").write_text("3000\n")
    out = tmp_path / "fm.json"
    if system == "cmake":
        build = ["--build", "cmake", "--src", str(FMSUM), "--exe", "fmsum", "-V", "fm=-O2 -ffast-math"]
    else:  # template, src, exe and the fm variant from perflab.toml, its src resolved next to it
        build = ["--config", str(FMSUM / "perflab.toml")]
    args = ["variants", *build, "-V", "pgo=-O2 pgo", "--train", "{exe} -f train.txt", "--rounds", "5", "--warmup", "0",
            "--metric", r"checksum: (?P<checksum>\S+)",
            "--db", str(tmp_path / "v.db"), "--json", str(out)]
    proc = _cli([*args, "--", "{exe}", "3000"], tmp_path, cache=shared_cache)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(out.read_text())["result"]
    rows = {r["name"]: r for r in data["variants"]}
    assert rows["fm"]["status"] == "different result", rows["fm"]
    assert data["fastest"] != "fm" and "DIFFERS" in proc.stdout
    assert rows["pgo"]["status"] == "measured" and not rows["pgo"]["notes"]  # trained in tmp_path
    assert not list(tmp_path.glob("*.gcda"))
    cmp = rows["fm"]["comparisons"]["wall_s"]
    assert set(cmp["ci"]) == {"low", "high", "level"} and cmp["pairs"] == 5
    print(f"{system}: fast-math wall ratio {cmp['ratio']:.3f} [{cmp['ci']['low']:.3f}, {cmp['ci']['high']:.3f}]")


def test_link_order_demo_end_to_end(shared_cache, tmp_path, capsys, monkeypatch):
    """The misordered line is detected and the libm sin is measurably slower than the archive's."""
    monkeypatch.setenv("PERFLAB_CACHE", str(shared_cache))
    monkeypatch.setenv("COLUMNS", "400")  # rich would wrap the one-line notes at 80 columns
    out = tmp_path / "v.json"
    main(["variants", "--link-order-demo", "--rounds", "7", "--db", str(tmp_path / "v.db"), "--json", str(out)])
    err = " ".join(capsys.readouterr().err.split())
    assert "archive-first: built" in err and "libmopt.a, an archive) comes before sinloop.c" in err
    data = json.loads(out.read_text())["result"]
    bad = {r["name"]: r for r in data["variants"]}["archive-first"]
    assert data["baseline"] == "objects-first" and any("link order" in n for n in bad["notes"])
    # glibc's sin is slower than the archive's polynomial (about 1.5x here); assert the direction
    assert bad["comparisons"]["wall_s"]["ratio"] > 1.0, bad
    with open_store(str(tmp_path / "v.db")) as st:
        assert len(st.measurements(data["campaign_id"])) == 14


# -- bad input: one line, exit 2 --------------------------------------------------------------


@pytest.mark.parametrize("template, start", [
    ("make CC={cc} -j{jobs}", "build template has no {src}"),
    ("make -C {src} CFLAGS={cflgs}", "build template has an unknown placeholder {cflgs}"),
    ("make -C {src} X={cc!r}", "build template has an unknown placeholder {cc!r}"),
    ("make -C '{src}", "build template \"make -C '{src}\": No closing quotation"),
])
def test_bad_template_is_one_line_exit_2(template, start, tmp_path):
    _one_line_error(_cli(["variants", "--build", template, "--src", str(FMSUM), "--exe", "fmsum",
                          "-V", "O3=-O3", "--", "{exe}"], tmp_path), start)


def test_template_values_stay_one_argument_never_shell(tmp_path):
    argv = fill_template("make -C {src} CFLAGS={cflags} X=\"{cc}\"", {"src": "/a b", "cflags": "-O2 -m32",
                                                                    "cc": "gcc; rm -rf /"})
    assert argv == ["make", "-C", "/a b", "CFLAGS=-O2 -m32", "X=gcc; rm -rf /"]


def test_make_and_cmake_failures_name_the_log(shared_cache, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(FMSUM, broken)
    (broken / "fmsum.c").write_text("int main(void) { return undefined_thing; }\n")
    line = _one_line_error(_cli(["variants", "--build", "make", "--src", str(broken), "--exe", "fmsum",
                                 "-V", "O3=-O3", "--db", str(tmp_path / "v.db"), "--", "{exe}"], tmp_path, cache=shared_cache),
                           "the baseline 'base' cannot be measured here: cannot build: make build of variant")
    assert "undefined_thing" in line and "full log: " in line
    log = Path(re.search(r"full log: (/.+?build\.log)", line).group(1))  # the path may hold a space
    assert log.is_file() and "undefined_thing" in log.read_text()
    (broken / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.13)\nproject(x C)\n"
                                           "message(FATAL_ERROR \"no such option here\")\n")
    line = _one_line_error(_cli(["variants", "--build", "cmake", "--src", str(broken), "--exe", "fmsum",
                                 "-V", "O3=-O3", "--db", str(tmp_path / "v.db"), "--", "{exe}"], tmp_path, cache=shared_cache),
                           "the baseline 'base' cannot be measured here: cannot build: CMake build")
    assert "no such option here" in line and "build.log" in line


def test_bad_matrix_is_one_line_exit_2(tmp_path):
    _one_line_error(_cli(["variants", "--source", str(FMSUM / "fmsum.c"), "--matrix", "abi=m128",
                          "--db", str(tmp_path / "x.db")], tmp_path), "unknown value 'm128' for matrix axis 'abi'")


# -- kill -9 in the middle, then resume --------------------------------------------------------


def test_kill_9_then_resume_repeats_and_loses_nothing(shared_cache, tmp_path):
    log, db, release = tmp_path / "executions.log", tmp_path / "v.db", tmp_path / "release"
    # The sixth run waits for the release file, created after the kill: the campaign cannot end
    # before the test kills it, however fast the machine.
    # the shell reads the paths (a TMPDIR may hold a space); {exe}, perflab's build, too
    ql, qr = shlex.quote(str(log)), shlex.quote(str(release))
    cmd = (f"n=$(wc -l < {ql} 2>/dev/null || echo 0); echo run >> {ql}; "
           f"[ $n -lt 5 ] || while [ ! -e {qr} ]; do sleep 0.01; done; exec \"{{exe}}\" 30000")
    args = [*PERFLAB, "variants", "--source", str(FMSUM / "fmsum.c"), "-V", "O1=-O1", "--rounds", "6",
            "--warmup", "0", "--db", str(db), "--", "sh", "-c", cmd]
    env = {**os.environ, "PERFLAB_CACHE": str(shared_cache)}
    proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline, stored = time.monotonic() + 240, 0
    while time.monotonic() < deadline and proc.poll() is None:
        if db.exists():
            try:
                with sqlite3.connect(db) as c:
                    stored = c.execute("select count(*) from measurements").fetchone()[0]
            except sqlite3.Error:
                stored = 0
        # the sixth has started and waits for the release: the kill lands with a run in flight
        if stored >= 5 and log.exists() and len(log.read_text().splitlines()) >= 6:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "finished before it could be killed: " + proc.stdout.read().decode()[-2000:]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with open_store(str(db)) as store:
        before = [(m.id, m.label, m.params["round"]) for m in store.measurements(store.campaigns()[-1].id)]
        assert store.campaigns()[-1].status == "running"  # killed: nobody could mark it
    executed = len(log.read_text().splitlines())
    assert len(before) == 5 and executed == 6  # the sixth was held in flight
    release.touch()
    resumed = subprocess.run([*PERFLAB, "resume", "--db", str(db), "--json", str(tmp_path / "r.json")], cwd=tmp_path,
                             env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "verdict:" in resumed.stdout + resumed.stderr
    data = json.loads((tmp_path / "r.json").read_text())["result"]
    with open_store(str(db)) as store:
        after = [(m.id, m.label, m.params["round"]) for m in store.measurements(data["campaign_id"])]
        camp = store.campaign(data["campaign_id"])
    assert camp.study == "variants" and camp.status == "done"
    assert after[:len(before)] == before  # nothing stored was lost or replaced
    assert len(after) == 12 and len({(lbl, r) for _, lbl, r in after}) == 12  # no run twice
    # only the missing runs ran again (plus, at most, the one killed in flight)
    assert len(log.read_text().splitlines()) - executed == 12 - len(before)
    assert {v["name"] for v in data["variants"]} == {"base", "O1"}
    assert set(data) == set(camp.summary) and data["variants"][1]["comparisons"]
