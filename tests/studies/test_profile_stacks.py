"""Call stacks of a profile: perf script chains folded, stored with the runs, the call tree,
and the exports other tools read (folded stacks, speedscope, CSV), on recorded perf output
(recorded here, for real: tests/real/test_profile_stacks.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perflab.measure.window import Window
from perflab.measure.window_mock import MockWindow, MockWindowRecorder
from perflab.model import Workload
from perflab.report.terminal.flame import tree_lines
from perflab.store import open_store
from perflab.studies import run_study
from perflab.studies.profile import study as profile
from perflab.studies.profile.stacks import OTHER, Node, cap, flame, fold, parse_stacks

DATA = Path(__file__).parents[1] / "data" / "perfscript"


def test_lbr_recording_from_a_pmu_machine_folds_root_first():
    samples = parse_stacks((DATA / "lbr-cycles-instructions.txt").read_text())
    assert len(samples) == 23  # every sample header of the excerpt
    assert {s.event for s in samples} == {"cycles", "instructions"}
    cycles = fold(samples, "cycles")
    assert sum(cycles.values()) == sum(s.event == "cycles" for s in samples) == 13
    assert cycles["main"] == 8 and cycles["cksum"] == 2
    assert cycles["_start;__libc_start_main;main;cksum"] == 1
    assert cycles["[unknown] ([unknown])"] == 1
    ins = fold(samples, "instructions")
    assert ins["_start;__libc_start_main;main;cksum"] == 2
    # the 9-frame LBR chain, kernel under libc under cksum, root first
    assert ("cksum;__GI___fread_unlocked;_IO_file_xsgetn;_IO_file_read;entry_SYSCALL_64_fastpath;"
            "sys_read;vfs_read;__vfs_read;ext4_file_read_iter") in ins


def test_our_format_offsets_stripped_names_demangled_and_folded():
    text = (" 7/7 1.000000100: 250000\n\t  4005d0 _Z3fooi.constprop.0+0x10 (/bin/x)\n"
            "\t  400400 main+0x4 (/bin/x)\n\n"
            " 7/7 1.000000200: 250000\n\t  4005d0 _Z3fooi.isra.1+0x12 (/bin/x)\n\t  400400 main+0x8 (/bin/x)\n\n"
            " 7/7 1.000000300: 250000\n\t  7f00 [unknown] (/lib/libz.so.1)\n\t  400400 main+0x8 (/bin/x)\n")
    assert fold(parse_stacks(text)) == {"main;foo(int)": 2, "main;[unknown] (libz.so.1)": 1}


def test_cap_keeps_the_frequent_stacks_and_sums_the_rest_into_other():
    stacks = {f"main;f{i}": i + 1 for i in range(10)}
    kept = cap(stacks, keep=3)
    assert kept == {"main;f9": 10, "main;f8": 9, "main;f7": 8, OTHER: sum(range(1, 8))}
    assert sum(kept.values()) == sum(stacks.values())


def test_tree_totals_and_intervals_across_recordings():
    per = [{"main;a": 6, "main;b": 4}, {"main;a": 5, "main;b": 5}, {"main;a": 7, "main;b": 3}]
    f = flame(per)
    main = f.root.children["main"]
    assert f.root.total == 30 and main.total == 30 and main.children["a"].total == 18
    lo, hi = main.children["a"].ci
    assert lo < 0.6 < hi  # the mean share of a, 0.6, inside its interval
    assert main.children["b"].self_ == 12
    # narrow frames pruned: with min share 0.5 only a stays
    assert set(flame(per, min_share=0.5).root.children["main"].children) == {"a"}


def test_tree_lines_stay_within_100_columns_however_deep():
    deep = ";".join(f"frame_with_a_rather_long_name_{i}" for i in range(60))
    f = flame([{deep: 5, "main;x" * 1: 5}, {deep: 4, "main;x": 6}])
    lines = list(tree_lines(f, 0.0))
    assert all(len(line) <= 100 for line in lines), max(lines, key=len)
    assert len(lines) == 2 + 60 + 2  # header, root, the deep chain, main and x
    assert any("[ 60]" in line for line in lines)  # past the drawn indent, the depth as a number


def _mock_model(spec, request):
    return MockWindow(samples=[("_Z3hotv", "/bin/app", 250000, 4)] * 30 + [("_Z4coldv", "/bin/app", 250000, 8)] * 10)


def test_stacks_stored_with_each_recording_and_replayed_by_analysis(tmp_path):
    store = open_store(str(tmp_path / "p.db"))
    cfg = profile.ProfileConfig(workload=Workload(name="app", argv=("app",)), window=Window("s", "e"),
                                call_graph="fp", repeat=3, out_dir=str(tmp_path / "out"), annotate_top=0)
    res = run_study(profile, cfg, store, MockWindowRecorder(_mock_model))
    assert res.stacks == {"main;hot()": 90, "main;cold()": 30}
    assert sum(res.stacks.values()) == res.samples
    runs = [m.result for m in store.measurements(res.campaign_id)]
    assert [r.health["stacks"] for r in runs] == [{"main;hot()": 30, "main;cold()": 10}] * 3
    again = profile.analyse(cfg, runs)
    assert again.stacks == res.stacks and again.flame.as_dict() == res.flame.as_dict()
    assert profile.ProfileResult.from_dict(res.as_dict()).as_dict() == res.as_dict()
    # without --call-graph nothing is kept and nothing is drawn
    plain = run_study(profile, profile.ProfileConfig(workload=Workload(name="app", argv=("app",)),
                                                     window=Window("s", "e"), out_dir=str(tmp_path / "o2"),
                                                     annotate_top=0), store, MockWindowRecorder(_mock_model))
    assert plain.stacks == {} and plain.flame is None


def _side_model(hot: int, extra: tuple[str, int] | None = None):
    def model(spec, request):
        k = int(spec.params["recording"])
        rows = [("_Z3hotv", hot + 2 * k), ("_Z3midv", 40 - k), ("_Z4coldv", 30 + k)] + ([extra] if extra else [])
        return MockWindow(samples=[(sym, "/bin/app", 250000, 4) for sym, n in rows for _ in range(n)])
    return model


def test_differential_flame_marks_exactly_what_the_table_test_calls_different(tmp_path):
    from perflab.studies.profile.diff import ProfileDiffConfig, ProfileDiffResult, diff, load_side

    store = open_store(str(tmp_path / "p.db"))
    ids = []
    for model in (_side_model(30), _side_model(90, ("_Z4newfv", 25))):
        cfg = profile.ProfileConfig(workload=Workload(name="app", argv=("app",)), window=Window("s", "e"),
                                    call_graph="fp", repeat=4, out_dir=str(tmp_path / f"o{len(ids)}"),
                                    annotate_top=0)
        ids.append(run_study(profile, cfg, store, MockWindowRecorder(model)).campaign_id)
    rec = MockWindowRecorder(_side_model(0))
    res = diff(ProfileDiffConfig(str(ids[0]), str(ids[1])), load_side(str(ids[0]), store, rec),
               load_side(str(ids[1]), store, rec))
    differs = {t.symbol for t in res.tests if t.differs}
    assert "hot()" in differs  # planted: 30 -> 90 samples of 100 -> 180
    nodes = {n.name: n for _, n in Node.from_dict(res.flame["root"]).walk()}
    marked = {name for name, n in nodes.items() if n.test and n.test["marked"]}
    assert marked == differs & set(nodes)
    for name, n in nodes.items():
        if n.test and not n.test["marked"]:
            assert name not in differs
    hot = nodes["hot()"]
    assert hot.a_share == pytest.approx(sum(30 + 2 * k for k in range(4)) / sum(100 + 2 * k for k in range(4)))
    assert hot.total == sum(90 + 2 * k for k in range(4))  # B's widths
    assert hot.test["low"] < hot.test["ratio"] < hot.test["high"] and hot.test["level"] == 0.95
    assert nodes["newf()"].a_share == 0.0
    assert any(o.startswith("only in B: newf()") for o in res.flame_only)
    assert ProfileDiffResult.from_dict(res.as_dict()).flame == res.flame


def test_ratio_interval_delta_method():
    from perflab.studies.profile.diff_flame import ratio_interval

    assert ratio_interval([0.1, 0.1], [0.2, 0.2], 0.95) == (2.0, 2.0, 2.0)  # constant sides: exact
    assert ratio_interval([0.1], [0.2, 0.3], 0.95) is None and ratio_interval([0, 0], [0.1, 0.2], 0.95) is None
    r, lo, hi = ratio_interval([0.09, 0.10, 0.11], [0.18, 0.20, 0.22], 0.95)
    assert r == pytest.approx(2.0) and lo < 2.0 < hi
    # log-symmetric, wider at a higher level
    assert lo * hi == pytest.approx(r * r)
    _, lo99, hi99 = ratio_interval([0.09, 0.10, 0.11], [0.18, 0.20, 0.22], 0.99)
    assert lo99 < lo and hi99 > hi


def test_context_frames_keep_recursion_levels_with_their_function():
    from perflab.measure.callgrind import context_frames

    assert context_frames("rec'2'main'(below main)") == ["rec'2", "main", "(below main)"]
    assert context_frames("leaf") == ["leaf"]


def test_ratio_interval_holds_its_level_on_simulated_null_diffs():
    """The tooltip's B/A interval at 95 %: on null diffs (both sides one program) under the
    profile harness's noise, how often it holds 1 (200 diffs x 8 functions measured 0.94-0.97
    over every model at 3 and 5 recordings a side: docs/profile.md)."""
    from perflab.checks.noise import STUDY_MODELS
    from perflab.checks.profile_diff import ratio_coverage

    for name in ("quiet", "two-speed", "loaded"):
        assert 0.92 <= ratio_coverage(STUDY_MODELS[name], 40, 3) <= 0.99, name


def test_flame_box_escapes_what_came_from_the_program():
    from perflab.report.flame import flame_box

    evil = "</script><script>alert(1)</script><!--"
    f = flame([{f"main;{evil}": 3, "main;ok": 1}])
    html = flame_box(f.as_dict(), "p-1", f"legend {evil}")
    assert "<script>alert" not in html and "<!--" not in html
    assert html.count("</script>") == 2  # the data's and the code's own, nothing else closes one
    data = html.split('class="flame-data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(data)["root"]["c"][0]["c"][0]["n"] == evil
