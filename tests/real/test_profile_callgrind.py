"""profile --instrument callgrind: Callgrind's format parsed to exact numbers, a window cut out
of a real run (a strict part of that run's counts), `profile diff` naming the one function of
minihlt that a rebuild made slower (tested: B/A exact, Holm), the diff's test on made-up counts
and its harness, and the one line where Valgrind is missing.

Simulation is slow: a run of minihlt with one event costs about 3.5 s here (its field map is
built at start-up, 75 % of the instructions), so the diff records two runs a side.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from perflab.checks.profile_counts import CASES, LINES, rates
from perflab.kernels.build import build
from perflab.kernels.minihlt import HERE, headers
from perflab.measure import callgrind
from perflab.measure.window import Window
from perflab.model import Workload
from perflab.report.terminal.profile import render_diff
from perflab.store import open_store
from perflab.studies import run_study
from perflab.studies.profile import study as profile
from perflab.studies.profile.diff import ProfileDiffConfig, ProfileDiffResult, Side, diff, load_side
from perflab.studies.profile.window import event_markers

needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None or shutil.which("vgdb") is None
                                    or shutil.which("gcc") is None, reason="valgrind and gcc needed")
EVENTS_C = Path(__file__).parents[1] / "data" / "profile_events.c"
# One call site of g from f, g calling itself, name compression, a cost line after calls=.
SAMPLE = """# callgrind format
version: 1
positions: line
events: Ir Dr
ob=(1) /bin/prog
fl=(1) prog.c
fn=(1) main
10 5 1
cfn=(2) g
calls=1 20
11 100 7
fn=(2)
20 90 6
cfn=(2)
calls=3 20
21 40 2
totals: 95 7
"""


def test_parse_exclusive_inclusive_and_recursion():
    c = callgrind.parse(SAMPLE)
    assert c.events == ["Ir", "Dr"] and c.totals == [95.0, 7.0]
    main, g = c.functions["main"], c.functions["g"]
    assert main.obj == "/bin/prog" and g.obj == "/bin/prog"
    assert main.self_ == [5.0, 1.0] and main.incl == [105.0, 8.0]
    # g's call to itself is not added to its own inclusive cost
    assert g.self_ == [90.0, 6.0] and g.incl == [90.0, 6.0]
    back = callgrind.counts_from_dict(callgrind.counts_to_dict(c))
    assert back.functions["main"].incl == main.incl and back.totals == c.totals


@pytest.fixture(scope="module")
def events_prog(tmp_path_factory):
    exe = tmp_path_factory.mktemp("ev") / "ev"
    subprocess.run(["gcc", "-O1", "-g", "-o", str(exe), str(EVENTS_C)], check=True)
    return str(exe)


@needs_valgrind
def test_window_is_a_strict_part_of_the_whole_run(events_prog, tmp_path):
    # 4 events, event 2 the hot one; 50 ms pauses between events
    wl = Workload(name="ev", argv=(events_prog, "4", "2", "200000", "50", "-"))
    cfg = profile.ProfileConfig(workload=wl, window=Window(*event_markers(2)), instrument="callgrind",
                                out_dir=str(tmp_path / "out"), threshold=0.0)
    with open_store(str(tmp_path / "p.db")) as store:
        res = run_study(profile, cfg, store, None)
        (m,) = store.measurements(res.campaign_id)
    assert res.opened and res.instrument == "callgrind" and res.count_events == ["Ir"]
    row = res.recordings[0]
    assert row["start_line"].startswith("start processing event #2 ")
    assert row["closed_by"] == "stop marker"
    window = callgrind.counts_from_dict(m.result.health["counts"])
    whole = callgrind.counts_from_dict(m.result.health["whole"])
    assert 0 < window.totals[0] < whole.totals[0]
    for name, f in window.functions.items():
        assert f.self_[0] <= whole.functions[name].self_[0], name
    # the events outside the window ran other_work: counted in the whole run only
    assert whole.functions["other_work"].self_[0] > 0
    assert window.functions.get("other_work") is None or window.functions["other_work"].self_[0] < \
        whole.functions["other_work"].self_[0]
    assert res.message.startswith(f"{res.count_totals[0]:,.0f} instructions per recording (callgrind)")
    assert profile.ProfileResult.from_dict(res.as_dict()).as_dict() == res.as_dict()


PLANT = "void FieldMap::field(const double p[3], double out[3]) const {\n"


def _minihlt(tmp: Path, planted: bool) -> str:
    """minihlt at -O1 -g; planted: FieldMap::field runs an extra loop of 40 volatile steps."""
    src = tmp / ("planted" if planted else "plain")
    src.mkdir()
    for p in [*HERE.glob("*.cpp"), *headers()]:
        text = p.read_text()
        if planted and p.name == "field.cpp":
            assert PLANT in text
            text = text.replace(PLANT, PLANT + "    for (volatile int planted = 0; planted < 40; planted = planted + 1) {}\n")
        (src / p.name).write_text(text)
    cpps = sorted(src.glob("*.cpp"))
    return str(build(cpps, "minihlt", cflags=["-std=c++17", "-O1", "-g"], ldflags=["-lm"],
                     extra_inputs=sorted(src.glob("*.h"))).path)


@needs_valgrind
def test_diff_names_the_planted_function_first(tmp_path):
    store = open_store(str(tmp_path / "p.db"))
    ids = []
    for planted in (False, True):
        exe = _minihlt(tmp_path, planted)
        wl = Workload(name="minihlt", argv=(exe, "--events", "1", "--static-mb", "1"))
        cfg = profile.ProfileConfig(workload=wl, instrument="callgrind", repeat=2,
                                    out_dir=str(tmp_path / "out"))
        ids.append(run_study(profile, cfg, store, None).campaign_id)
    a, b = (load_side(str(i), store, None) for i in ids)  # type: ignore[arg-type]  # no recorder: both sides are stored
    res = diff(ProfileDiffConfig(str(ids[0]), str(ids[1])), a, b)
    top = res.count_rows[0]
    assert top.symbol == "mh::FieldMap::field(double const*, double*) const"
    assert top.change > 0 and top.changed and top.p_holm is not None and top.p_holm < res.alpha
    # every recording of each side counted the same: B/A is exact, the 40 steps a call doubled it
    assert top.exact and top.low == top.high == top.ratio and 1.9 < top.ratio < 2.1
    # nothing else changed: the other functions of >= 0.1 % of Ir count the same in both builds
    # (printf's digits, which follow the printed timings, hold a few hundred Ir: below the share)
    assert [r.symbol for r in res.count_changed] == [top.symbol]
    assert res.count_tested >= 20
    assert all(r.status == "below" for r in res.count_rows[1:5])
    # a whole run: minihlt prints its timings, so a few hundred of 360 million instructions move
    assert max(res.a_totals) - min(res.a_totals) < 1e-5 * res.a_totals[0]
    assert max(res.b_totals) - min(res.b_totals) < 1e-5 * res.b_totals[0]
    assert top.change > 100 * max(top.a_range[1] - top.a_range[0], top.b_range[1] - top.b_range[0], 1)
    assert res.verdict.startswith(f"{top.symbol} changed most: +")
    assert f"1 of {res.count_tested} functions tested changed" in res.verdict
    assert "exact (every recording of each side counted the same)" in res.verdict
    assert ProfileDiffResult.from_dict(res.as_dict()).as_dict() == res.as_dict()
    # the differential flame graph marks the planted function's frames, and only those
    from perflab.studies.profile.stacks import Node

    nodes = [n for _, n in Node.from_dict(res.flame["root"]).walk()]
    marked = {n.name for n in nodes if n.test and n.test["marked"]}
    assert marked == {top.symbol}
    field = next(n for n in nodes if n.name == top.symbol)
    assert field.test["ratio"] == top.ratio and field.test["level"] == 1.0 and "exact" in field.test["text"]
    assert field.total > field.a_share * res.flame["root"]["v"]  # it grew: its share of B above A's
    from rich.console import Console

    console = Console(width=400, record=True)
    render_diff(res, console)
    text = console.export_text()
    assert re.search(r"\|?\s*\+[\d,]+ .* 2\.\d{4} exact .* 0 \* .*mh::FieldMap::field", text.split("\n", 3)[3])
    assert res.test_note in " ".join(text.split())
    assert res.verdict in " ".join(text.split())


def _counts(**functions: float) -> callgrind.Counts:
    funcs = {k: callgrind.FunctionCounts(k, "/bin/p", [v], [v]) for k, v in functions.items()}
    return callgrind.Counts(["Ir"], [sum(functions.values())], funcs, 1)


def test_count_diff_tests_each_function_and_names_appeared_and_vanished():
    a = [_counts(big=1e6, mid=5e5, old=2e5, tiny=10), _counts(big=1e6, mid=5e5, old=2e5, tiny=12)]
    b = [_counts(big=1e6, mid=5.5e5, new=3e5, tiny=20), _counts(big=1e6, mid=5.5e5, new=3e5, tiny=20)]
    res = diff(ProfileDiffConfig("a", "b", threshold=0.0), Side("a", [], "callgrind", a),
               Side("b", [], "callgrind", b))
    rows = {r.symbol: r for r in res.count_rows}
    assert rows["new"].status == "appeared" and rows["old"].status == "vanished"
    assert rows["tiny"].status == "below" and not rows["tiny"].changed  # 10 -> 20, but 1e-5 of Ir
    # two tested, both sides constant: exact, p 0 (mid) and 1 (big), Holm over 2
    assert res.count_tested == 2 and rows["big"].p == 1.0 and not rows["big"].changed
    assert rows["mid"].exact and rows["mid"].ratio == pytest.approx(1.1) and rows["mid"].p_holm == 0.0
    assert [r.symbol for r in res.count_changed] == ["mid"]
    assert "appeared in b: new +300,000" in res.verdict and "vanished from b: old -200,000" in res.verdict
    # a window's jitter: Welch's t on the logs, an interval at 95 %
    jit = [_counts(big=1e6 * f, mid=5e5 * f) for f in (0.99, 1.01, 1.0)]
    res = diff(ProfileDiffConfig("a", "b", threshold=0.0), Side("a", [], "callgrind", jit),
               Side("b", [], "callgrind", [_counts(big=1e6 * f, mid=5.5e5 * f) for f in (1.0, 0.995, 1.01)]))
    mid = next(r for r in res.count_rows if r.symbol == "mid")
    assert mid.level == 0.95 and mid.low < 1.1 < mid.high and 0 < mid.p < 0.05
    # the common factor makes big's and mid's jitter alike; only mid moved
    assert not next(r for r in res.count_rows if r.symbol == "big").changed
    # one recording a side: no test, nothing called changed
    one = diff(ProfileDiffConfig("a", "b"), Side("a", [], "callgrind", a[:1]), Side("b", [], "callgrind", b[:1]))
    assert not one.count_changed and one.verdict.startswith("no test possible: 1 and 1 recording(s)")
    assert "nothing is called changed" in one.verdict
    assert ProfileDiffResult.from_dict(res.as_dict()).as_dict() == res.as_dict()


def test_counts_harness_quiet_on_nulls_and_finds_the_planted_function():
    whole, window = LINES[0], LINES[1]
    for case, per_side, min_effect in (whole, window):
        fp, det = rates(case, 30, per_side=per_side, min_effect=min_effect)
        assert fp <= 0.1 and det >= 0.9, case.name
    # 2 windows a side cannot find +10 % through 1 % jitter (Welch with 1-2 df, Holm over 12)
    assert rates(CASES["window"], 30, per_side=2)[1] <= 0.3


def test_no_valgrind_is_one_line(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty), "PERFLAB_DB": str(tmp_path / "p.db")}
    r = subprocess.run([sys.executable, "-m", "perflab", "profile", "--instrument", "callgrind", "--",
                        "/bin/true"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "perflab: error: --instrument callgrind needs Valgrind, which is not installed: install it "
        "(apt-get install valgrind, or make system)"]


@needs_valgrind
def test_cli_names_the_file_for_counts_per_source_line(tmp_path):
    env = {**os.environ, "COLUMNS": "400"}
    r = subprocess.run([sys.executable, "-m", "perflab", "profile", "--instrument", "callgrind", "--repeat", "1",
                        "--db", str(tmp_path / "p.db"), "--", "/bin/true"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("counts per source line: "))
    path = line.rsplit(" ", 1)[1]
    assert line.startswith("counts per source line: callgrind_annotate --auto=yes ") and os.path.exists(path)
