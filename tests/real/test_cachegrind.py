"""--instrument cachegrind: the cache model (given, detected from sysfs trees, refused with one
line), the measures from Cachegrind's totals to exact numbers, and real simulated runs of tiny C
programs: identical counts run after run, from two working directories and two environments, a
spread where the program is not deterministic, and a gate that catches a planted +1 %.

Simulation is slow (0.3-1 s per run of a tiny program on this shared machine), so the real runs
use a few runs each and a program of about 1.7 million instructions.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from perflab.errors import PerflabError
from perflab.measure import cachegrind
from perflab.model import MetricPattern, RunSpec
from perflab.platform import cache_model
from perflab.platform.sysfs import Root

# A loop whose count is fixed at compile time: N=202200 runs about 1.0 % more instructions than
# N=200000 (17,600 of 1.73 million, measured with Valgrind 3.19).
PROGRAM = r"""
#include <stdio.h>
int main(void) {
    volatile unsigned long s = 0;
    for (unsigned long i = 0; i < N; i++) s += i * i;
    printf("%d events\n", 100);
    return 0;
}
"""
# Its loop count drawn from /dev/urandom: a program whose counts differ run to run.
RANDOM_PROGRAM = r"""
#include <stdio.h>
int main(void) {
    unsigned short r = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(&r, sizeof r, 1, f) != 1) return 1;
    volatile unsigned long s = 0;
    for (unsigned long i = 0; i < 1000 + r; i++) s += i;
    return 0;
}
"""

needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None or shutil.which("gcc") is None,
                                    reason="valgrind and gcc needed (make system installs them)")


def _build(tmp: Path, name: str, source: str, n: int | None = None) -> Path:
    src = tmp / f"{name}.c"
    src.write_text(source)
    exe = tmp / name
    subprocess.run(["gcc", "-O1", *([f"-DN={n}"] if n else []), "-o", str(exe), str(src)], check=True)
    return exe


def perflab(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PERFLAB_DB": str(cwd / "perflab.db"), **(env or {})}
    return subprocess.run([sys.executable, "-m", "perflab", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=240)


# -- the cache model -------------------------------------------------------------------------

def test_cache_model_parses_and_round_trips():
    m = cache_model.parse("I1=32768,8,64 D1=49152,12,64;LL=33554432,16,64")
    assert (m.d1.size, m.d1.ways, m.d1.line, m.d1.sets) == (49152, 12, 64, 64)
    assert cache_model.parse(m.text()) == m
    assert m.valgrind_options() == ("--I1=32768,8,64", "--D1=49152,12,64", "--LL=33554432,16,64")


@pytest.mark.parametrize("text, words", [
    ("I1=32768,8,64 D1=32768,8,64", "LL missing"),
    ("I1=32768,8,64 D1=32768,8,64 LL=32768 ", "does not parse"),
    ("I1=32768,8,64 D1=32768,8,64 L2=1048576,16,64", "does not parse"),
    ("I1=32768,8,64 D1=32768,8,64 LL=37748736,12,64", "power-of-two set count"),
    ("I1=32768,8,8 D1=32768,8,64 LL=33554432,16,64", "line size 8"),
    ("I1=32768,8,64 I1=32768,8,64 D1=32768,8,64 LL=33554432,16,64", "given twice"),
])
def test_cache_model_refused_in_one_line(text, words):
    with pytest.raises(PerflabError) as err:
        cache_model.parse(text)
    assert words in str(err.value) and "\n" not in str(err.value) and "write it like" in str(err.value)


def _cache_tree(root: Path, caches: list[tuple[int, str, str, int, int]]) -> Root:
    base = root / "sys/devices/system/cpu/cpu0/cache"
    for i, (level, kind, size, ways, line) in enumerate(caches):
        d = base / f"index{i}"
        d.mkdir(parents=True)
        for name, value in (("level", level), ("type", kind), ("size", size),
                            ("ways_of_associativity", ways), ("coherency_line_size", line)):
            (d / name).write_text(f"{value}\n")
    return Root(str(root))


def test_cache_model_detected_from_sysfs_with_a_non_power_of_two_l3(tmp_path):
    root = _cache_tree(tmp_path, [(1, "Data", "48K", 12, 64), (1, "Instruction", "32K", 8, 64),
                                  (2, "Unified", "1280K", 10, 64), (3, "Unified", "36864K", 12, 64)])
    m = cache_model.detect(root)
    assert m.source == "detected"
    assert m.text() == "I1=32768,8,64 D1=49152,12,64 LL=37748736,18,64"
    assert m.notes == ("LL 37748736 bytes 12-way has 49152 sets, not a power of two: simulated "
                       "as 37748736 bytes 18-way",)
    cache_model.parse(m.text())  # what was detected is simulable


def test_cache_model_falls_back_where_sysfs_has_no_caches(tmp_path):
    m = cache_model.detect(Root(str(tmp_path)))
    assert m.source == "fallback" and m.text() == cache_model.FALLBACK and "--cache-model" in m.notes[0]


# -- the measures ---------------------------------------------------------------------------

# The totals line of a real run of the test program (N=200000) under Valgrind 3.19.
OUT = """desc: I1 cache:         32768 B, 64 B, 8-way associative
cmd: ./u200000
events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw Bc Bcm Bi Bim
fl=???
summary: 1726956 1256 1238 228904 1216 998 210565 379 349 225152 3211 297 159
"""


def test_measures_and_estimated_cycles_to_exact_numbers():
    counts = cachegrind.parse(OUT)
    assert counts["Ir"] == 1726956 and counts["Bim"] == 159
    m = cachegrind.measures(counts, events=100)
    l1_misses, ram = 1256 + 1216 + 379, 1238 + 998 + 349
    l1_hits = 1726956 + 228904 + 210565 - l1_misses
    assert m["estimated_cycles"] == l1_hits + 5 * (l1_misses - ram) + 35 * ram == 2255379
    assert (m["instructions"], m["i1_misses"], m["d1_misses"], m["ll_misses"]) == (1726956, 1256, 1595, 2585)
    assert (m["cond_mispredicts"], m["ind_mispredicts"]) == (3211, 159)
    assert m["instructions_per_event"] == 17269.56
    assert "instructions_per_event" not in cachegrind.measures(counts)


def test_collect_sums_every_process(tmp_path):
    for pid in (11, 12):
        (tmp_path / f"cg.{pid}.1").write_text(OUT)
    (tmp_path / "vg.11.log").write_text("==11== Cachegrind\n")
    counts, files = cachegrind.collect(str(tmp_path))
    assert files == 2 and counts["Ir"] == 2 * 1726956


def test_wrap_passes_a_fixed_minimal_environment():
    spec = RunSpec(argv=("./prog", "--events", "20"), env={"OMP_NUM_THREADS": "1"})
    model = cache_model.parse(cache_model.FALLBACK)
    argv = cachegrind.wrap(spec, model, "/tmp/x", "/usr/bin/valgrind")
    assert argv[1] == "-i" and "PATH=" + cachegrind.STABLE_PATH in argv and "LC_ALL=C" in argv
    assert "OMP_NUM_THREADS=1" in argv and not any(a.startswith("PWD=") for a in argv)
    assert "--trace-children=yes" in argv and "--I1=32768,8,64" in argv
    assert argv[-3:] == ("./prog", "--events", "20")


# -- bad input ------------------------------------------------------------------------------

def test_cache_model_without_the_instrument_is_refused(tmp_path):
    p = perflab("run", "--cache-model", cache_model.FALLBACK, "--", "/bin/true", cwd=tmp_path)
    assert p.returncode == 2 and "--cache-model is for --instrument cachegrind" in p.stderr
    assert "Traceback" not in p.stderr


def test_missing_valgrind_is_one_line_and_exit_2(tmp_path):
    # PATH without Valgrind: the command is given by its full path.
    p = perflab("run", "--instrument", "cachegrind", "--runs", "1", "--", "/bin/true",
                cwd=tmp_path, env={"PATH": str(tmp_path)})
    assert p.returncode == 2, p.stderr
    assert "needs Valgrind, which is not installed: install it (apt-get install valgrind" in p.stderr
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1


# -- real simulated runs --------------------------------------------------------------------

@needs_valgrind
def test_measures_are_stored_and_identical_across_runs(tmp_path):
    _build(tmp_path, "prog", PROGRAM, 200000)
    p = perflab("run", "--instrument", "cachegrind", "--runs", "3", "--metric",
                r"(?P<events>\d+) events", "--json", "-", "--", "./prog", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    section = json.loads(p.stdout)["result"]["instrument"]
    assert section["deterministic"] and section["cache_model_source"] == "detected"
    assert section["cache_model"] == cache_model.detect().text()
    err = " ".join(p.stderr.split())  # piped output may be folded to its width
    assert "x slower simulated" in err and "keep the input short" in err
    with sqlite3.connect(tmp_path / "perflab.db") as db:
        rows = [json.loads(r[0]) for r in db.execute("SELECT metrics FROM measurements")]
    assert len(rows) == 3
    for name in cachegrind.MEASURES + ("instructions_per_event",):
        assert len({r[name] for r in rows}) == 1, name
    assert rows[0]["instructions"] > 1_000_000 and rows[0]["processes"] == 1


@needs_valgrind
def test_same_counts_from_two_working_directories_and_two_environments(tmp_path, monkeypatch):
    from perflab.measure.real import RealExecutor

    exe = _build(tmp_path, "prog", PROGRAM, 200000)
    deep = tmp_path / ("a-much-longer-directory-name" * 3) / "below"
    deep.mkdir(parents=True)
    shutil.copy(exe, deep / "prog")
    model = cache_model.parse(cache_model.FALLBACK)
    counts = []
    with RealExecutor() as inner:
        ex = cachegrind.CachegrindExecutor(inner, model)
        try:
            for cwd, extra in ((tmp_path, ""), (deep, "x" * 4000)):
                monkeypatch.setenv("PERFLAB_TEST_PADDING", extra)
                spec = RunSpec(argv=("./prog",), cwd=str(cwd), instrument="cachegrind",
                               metrics=(MetricPattern(r"(?P<events>\d+) events"),), label="prog")
                counts.append(ex.run(spec).metrics["instructions"])
        finally:
            ex.close()
    assert counts[0] == counts[1]


@needs_valgrind
def test_a_nondeterministic_program_shows_its_spread(tmp_path):
    _build(tmp_path, "rnd", RANDOM_PROGRAM)
    p = perflab("run", "--instrument", "cachegrind", "--runs", "3", "--json", "-", "--", "./rnd",
                cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    section = json.loads(p.stdout)["result"]["instrument"]
    ir = next(r for r in section["spread"] if r["measure"] == "instructions")
    assert ir["spread"] > 0 and not section["deterministic"] and "instructions" in section["varying"]
    assert "not deterministic: instructions" in " ".join(p.stderr.split())  # stderr with --json -


@needs_valgrind
def test_gate_on_instructions_catches_a_planted_one_percent(tmp_path):
    base = _build(tmp_path, "base", PROGRAM, 200000)
    plus = _build(tmp_path, "plus", PROGRAM, 202200)
    prog = tmp_path / "prog"

    def run(build: Path, runs: int, *gate: str) -> subprocess.CompletedProcess:
        shutil.copy(build, prog)
        return perflab("run", "--instrument", "cachegrind", "--runs", str(runs), *gate,
                       "--", "./prog", cwd=tmp_path, env={"COLUMNS": "400"})  # a gate line unfolded

    p = run(base, 2, "--baseline-save", "main")
    assert p.returncode == 0, p.stderr
    gate = ("--baseline", "main", "--fail-if", "instructions>+0.5%", "--fail-if", "estimated_cycles>+1%")
    same = run(base, 2, *gate)
    assert same.returncode == 0 and "gate: pass" in same.stdout, same.stdout + same.stderr
    # Counted, not timed: 2 runs a side see a +1 % change in instructions.
    four = run(plus, 2, *gate)
    assert four.returncode == 1 and "gate: FAIL" in four.stdout, four.stdout + four.stderr
    assert "counted, not timed" in four.stdout
    line = next(ln for ln in four.stdout.splitlines() if ln.startswith("FAIL") and "instructions" in ln)
    assert "+1.0 %" in line
