"""The profile study through the mock window recorder: analysis, naming, failures, resume, snapshots."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from rich.console import Console

from perflab.errors import PerflabError
from perflab.measure.window import Window
from perflab.measure.window_mock import MockWindow, MockWindowRecorder
from perflab.model import Workload
from perflab.platform.machine import Machine
from perflab.platform.topology import Topology
from perflab.report.terminal.profile import render, render_diff
from perflab.store import open_store
from perflab.studies import resume_study, run_study
from perflab.studies.profile import study as profile
from perflab.studies.profile.diff import ProfileDiffConfig, ProfileDiffResult, Side, diff, unit_of
from perflab.studies.profile.parse import aggregate, parse_script
from perflab.studies.profile.window import event_markers

SNAPSHOTS = Path(__file__).parents[1] / "snapshots"
EV = "/opt/ev/bin/ev"


def _machine(pmu: bool = False) -> Machine:
    probes = {"hw_counters": {"available": pmu, "reason": "hardware counters work" if pmu else "no PMU (fixture)"}}
    return Machine(topology=Topology(cpus=(), cores=(), sockets=(), nodes=()),
                   metadata={"hostname": "t", "probes": probes})


def _samples(hot: int, helper: int, unknown: int = 0, period: int = 250_000) -> list:
    # hot_kernel: 1 in 4 samples on its first bytes; helper: flat
    return ([("hot_kernel", EV, period, 0x4 if i % 4 == 0 else 0x40) for i in range(hot)]
            + [("helper.constprop.0", EV, period, 0x30) for _ in range(helper)]
            + [("[unknown]", "/usr/games/gnugo", period, 0) for _ in range(unknown)])


def _config(tmp_path: Path, **kw) -> profile.ProfileConfig:
    base = dict(workload=Workload(name="ev", argv=(EV, "5")), window=Window(*event_markers(2)),
                out_dir=str(tmp_path / "out"), event="cpu-clock")
    base.update(kw)
    return profile.ProfileConfig(**base)


def _run(tmp_path, model, **kw):
    tmp_path.mkdir(parents=True, exist_ok=True)
    store = open_store(str(tmp_path / "p.db"))
    rec = MockWindowRecorder(model)
    res = run_study(profile, _config(tmp_path, **kw), store, rec, machine=_machine())
    return res, rec, store


def test_analysis_on_simulated_windows(tmp_path):
    res, rec, store = _run(tmp_path, lambda spec, req: MockWindow(_samples(80, 20)), repeat=3)
    assert res.opened and res.samples == 300 and not res.whole_run
    assert [(t.symbol, round(t.share, 3)) for t in res.top] == [("hot_kernel", 0.8), ("helper", 0.2)]
    assert res.message.startswith("300 samples (cpu-clock) in 3 window(s) /start processing event #2")
    assert res.message.endswith("top: hot_kernel 80.0%")
    assert [r["enable_latency_us"] for r in res.recordings] == [150.0] * 3
    # what was asked of the recorder: one request per recording, perf.data per campaign folder
    reqs = [r for _, r in rec.recorded]
    assert [Path(r.perf_data).name for r in reqs] == ["perf-0.data", "perf-1.data", "perf-2.data"]
    assert {r.event for r in reqs} == {"cpu-clock"} and reqs[0].window == Window(*event_markers(2))
    ms = store.measurements(res.campaign_id)
    assert [(m.params["recording"], m.rep) for m in ms] == [(0, 0), (1, 1), (2, 2)]
    # the analysis is pure on stored runs
    again = profile.analyse(_config(tmp_path, repeat=3), [m.result for m in ms])
    assert again.message == res.message
    # annotation falls back to sample offsets (no disassembly from the mock): 25 % on the head
    (ann,) = [a for a in res.annotations if a.symbol == "hot_kernel"]
    assert ann.head_desc == "first 16 bytes" and ann.head_share == pytest.approx(0.25)
    assert profile.ProfileResult.from_dict(res.as_dict()).as_dict() == res.as_dict()


def test_default_event_follows_the_pmu(tmp_path):
    cfg = _config(tmp_path, event=None)
    assert {s.params["event"] for s in profile.plan(cfg, _machine(pmu=True))} == {"cycles"}
    assert {s.params["event"] for s in profile.plan(cfg, _machine(pmu=False))} == {"cpu-clock"}
    store = open_store(str(tmp_path / "p.db"))
    res = run_study(profile, cfg, store, MockWindowRecorder(lambda s, r: MockWindow(_samples(5, 5))),
                    machine=_machine(pmu=False))
    assert res.event == "cpu-clock"
    assert res.event_reason == "event cpu-clock: no hardware cycles counter here (no PMU (fixture))"


def test_failed_recordings_left_out_and_all_failed_reported(tmp_path):
    def model(spec, req):
        k = int(Path(req.perf_data).stem.split("-")[1])
        return MockWindow(_samples(50, 50), exit_code=3 if k == 1 else 0)

    res, _, store = _run(tmp_path, model, repeat=3)
    assert res.samples == 200 and res.failed == ["exit status 3"]
    assert "1 of 3 recording(s) failed and are left out (exit status 3)" in res.message
    ms = store.measurements(res.campaign_id)
    assert [m.result.failure for m in ms] == [None, "exit status 3", None]
    res2, _, _ = _run(tmp_path / "b", lambda s, r: MockWindow(_samples(5, 5), exit_code=139), repeat=2)
    assert not res2.opened and not res2.top
    assert res2.message == "all 2 recording(s) failed (exit status 139): no profile"


def test_whole_run_is_called_that(tmp_path):
    res, _, _ = _run(tmp_path, lambda s, r: MockWindow(_samples(60, 40)), window=Window())
    assert res.whole_run and res.window == "whole run"
    assert "in the whole run (no event markers: give --start/--stop or --event N" in res.message


def test_mostly_unknown_symbols_are_not_named_top(tmp_path):
    res, _, _ = _run(tmp_path, lambda s, r: MockWindow(_samples(1, 0, unknown=99)), window=Window())
    assert res.unknown_share == pytest.approx(0.99)
    assert res.top[0].symbol == "[unknown] (gnugo)"  # the table still shows where samples went
    assert "top:" not in res.message
    assert "most samples (99%) have no symbol, so no top function can be named" in res.message
    assert "largest named: hot_kernel 1.0%" in res.message
    assert "debug-symbol package" in res.symbol_hint and "-g" in res.symbol_hint
    assert "--call-graph dwarf" in res.symbol_hint and "gnugo" in res.symbol_hint


def test_partly_unknown_symbols_make_the_ranking_incomplete(tmp_path):
    res, _, _ = _run(tmp_path, lambda s, r: MockWindow(_samples(50, 20, unknown=30)), window=Window())
    assert res.message.endswith("top: hot_kernel 50.0%, but 30% of the samples have no symbol: "
                                "the ranking is incomplete")
    assert res.symbol_hint.startswith("30% of the samples have no symbol (in gnugo)")
    clean, _, _ = _run(tmp_path / "c", lambda s, r: MockWindow(_samples(50, 45, unknown=5)), window=Window())
    assert clean.message.endswith("top: hot_kernel 50.0%") and not clean.symbol_hint


def test_window_never_opened(tmp_path):
    res, _, _ = _run(tmp_path, lambda s, r: MockWindow(opened=False))
    assert not res.opened
    assert res.message == r"the window never opened (start marker /start processing event #2(?!\d)/ not seen)"
    # the marker read, `enable` sent, and the run over before perf's ack (a loaded machine):
    # the message must not say the marker was not seen
    late, _, _ = _run(tmp_path / "late", lambda s, r: MockWindow(opened=False, marker_seen=True))
    assert not late.opened and "not seen" not in late.message
    assert late.message.startswith(r"the window never opened (start marker /start processing event #2(?!\d)/ "
                                   "seen, but the run ended before perf acknowledged enable, in 1 of 1 "
                                   "recording(s) that did not open: ")


def test_resume_records_only_missing_windows(tmp_path):
    calls = []

    def model(spec, req):
        calls.append(req.perf_data)
        if len(calls) == 3:
            raise KeyboardInterrupt  # Ctrl-C while the third window is being recorded
        return MockWindow(_samples(40, 10))

    store = open_store(str(tmp_path / "p.db"))
    cfg = _config(tmp_path, repeat=4)
    with pytest.raises(KeyboardInterrupt):
        run_study(profile, cfg, store, MockWindowRecorder(model), machine=_machine())
    (camp,) = store.campaigns()
    assert camp.status == "interrupted"
    stored = store.measurements(camp.id)
    assert [m.rep for m in stored] == [0, 1]
    rec = MockWindowRecorder(lambda s, r: MockWindow(_samples(40, 10)))
    name, res = resume_study(store, None, rec)
    assert name == "profile" and res.campaign_id == camp.id
    assert [Path(r.perf_data).name for _, r in rec.recorded] == ["perf-2.data", "perf-3.data"]
    after = store.measurements(camp.id)
    assert [m.rep for m in after] == [0, 1, 2, 3]
    assert [m.id for m in after[:2]] == [m.id for m in stored]
    assert store.campaign(camp.id).status == "done" and res.samples == 200


def test_attach_plan_and_request(tmp_path):
    cfg = profile.ProfileConfig(pid=os.getpid(), log_file=str(tmp_path / "job.log"),
                                window=Window(*event_markers(3)), children=True, event="cpu-clock",
                                out_dir=str(tmp_path / "out"))  # not ./perflab-out in the checkout
    (spec,) = profile.plan(cfg, _machine())
    assert spec.params == {"recording": 0, "event": "cpu-clock", "pid": os.getpid()}
    rec = MockWindowRecorder(lambda s, r: MockWindow(_samples(10, 0)))
    store = open_store(str(tmp_path / "p.db"))
    res = run_study(profile, cfg, store, rec, machine=_machine())
    (_, req), = rec.recorded
    assert req.attach[0] == os.getpid() and req.inherit and req.output_log is None
    assert res.recordings[0]["attached"][0] == os.getpid()


@pytest.mark.parametrize("kw,msg", [
    (dict(repeat=0), "--repeat 0: give at least 1"),
    (dict(window=Window("event #(")), "--start 'event #(' is not a valid regular expression"),
    (dict(log_file="/no/such/dir/job.log"), "--log /no/such/dir/job.log: directory /no/such/dir does not exist"),
    (dict(workload=None), "nothing to profile"),
    (dict(workload=None, pid=2 ** 22 + 7), f"--pid {2 ** 22 + 7}: no such process"),
    # a process of the user running the tests: pid 1 is root's, refused first without root
    (dict(workload=None, pid=os.getpid(), window=Window(*event_markers(1))), "--pid needs --log FILE"),
])
def test_bad_config_one_line(tmp_path, kw, msg):
    with pytest.raises(PerflabError) as exc:
        profile.validate(_config(tmp_path, **kw))
    assert str(exc.value).startswith(msg) and "\n" not in str(exc.value)


def _snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("PERFLAB_UPDATE_SNAPSHOTS"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert text == path.read_text()


def _console() -> Console:
    return Console(file=io.StringIO(), width=110, record=True, color_system=None)


def test_snapshot_profile_terminal(tmp_path):
    res, _, _ = _run(tmp_path, lambda s, r: MockWindow(_samples(80, 20)), repeat=2)
    con = _console()
    render(res, con)
    _snapshot("profile.txt", con.export_text())
    res2, _, _ = _run(tmp_path / "u", lambda s, r: MockWindow(_samples(2, 0, unknown=98)), window=Window())
    con = _console()
    render(res2, con)
    _snapshot("profile_unknown.txt", con.export_text())


def _side(label, counts, event="cpu-clock"):
    profs = []
    for hot, helper in counts:
        lines = "\n".join(f" 1/1 1.{i:09d}: 250000 401000 {sym}+0x10 ({EV})"
                          for i, sym in enumerate(["hot_kernel"] * hot + ["helper"] * helper))
        profs.append(aggregate(parse_script(lines)))
    return Side(label, profs, event)


def test_diff_units_tests_and_refusals():
    assert unit_of("cpu-clock") == "ms" and unit_of("task-clock") == "ms"
    assert unit_of("cycles") == "Mcycles" and unit_of("cycles:u") == "Mcycles"
    assert unit_of("cpu/cycles/") == "Mcycles" and unit_of("instructions") == "M instructions"
    a = _side("core0", [(100, 50), (104, 49), (98, 51)])
    b = _side("core8", [(140, 50), (150, 52), (145, 49)])
    d = diff(ProfileDiffConfig("core0", "core8", threshold=0.0), a, b)
    assert not d.swapped and d.unit == "ms" and d.n_recordings == (3, 3) and d.tested
    top = d.rows[0]
    assert top.symbol == "hot_kernel" and top.extra == pytest.approx(44.333 * 0.25, rel=1e-3)
    # hot_kernel's share 66.8 % -> 74.2 %: Welch p over two functions, Holm doubles the smaller
    tests = {t.symbol: t for t in d.tests}
    assert set(tests) == {"hot_kernel", "helper"} and d.alpha == pytest.approx(0.05)
    hot = tests["hot_kernel"]
    assert hot.share_a == pytest.approx((100 / 150 + 104 / 153 + 98 / 149) / 3)
    assert hot.p_holm == pytest.approx(min(1.0, 2 * min(t.p for t in d.tests)))
    assert [t.symbol for t in d.differing] == ["hot_kernel", "helper"]  # helper's share shrank with it
    assert d.verdict.startswith("2 functions take a different share of the period in core8 than in core0 "
                                "(Welch, Holm over 2 at 5%): hot_kernel 66.8% -> 74.2% (Holm p ")
    assert d.test_note.startswith("test: Welch's t on each function's share of a recording (3 and 3")
    two = diff(ProfileDiffConfig("a", "b"), _side("a", [(100, 50), (101, 50)]), b)
    assert not two.tested and two.tests == [] and not two.differing
    assert two.verdict.startswith("no test possible: 2 and 3 recording(s), a test needs >= 3 per side "
                                  "(perflab profile --repeat 3); the table is descriptive only: core8 has +")
    with pytest.raises(PerflabError, match="recorded with cpu-clock and b with cycles"):
        diff(ProfileDiffConfig("a", "b"), _side("a", [(1, 1)]), _side("b", [(2, 1)], "cycles"))
    # Same shares, more period on b: the machine was slower, no function differs.
    null = diff(ProfileDiffConfig("a", "b"), _side("a", [(100, 50), (110, 54), (95, 48)]),
                _side("b", [(104, 52), (120, 59), (108, 55)]))
    assert null.tested and not null.differing
    assert null.verdict.startswith("no function's share of the period differs between a and b (Welch, "
                                   "Holm over 2 at 5%); b has +")
    cyc = diff(ProfileDiffConfig("a", "b"), _side("a", [(1, 1)], "cycles"), _side("b", [(3, 1)], "cycles"))
    assert cyc.unit == "Mcycles"
    con = _console()
    render_diff(d, con)
    _snapshot("profile_diff.txt", con.export_text())
    assert ProfileDiffResult.from_dict(json.loads(json.dumps(d.as_dict()))).verdict == d.verdict


def test_diff_one_recording_per_side_is_descriptive_only():
    one = diff(ProfileDiffConfig("a", "b"), _side("a", [(100, 50)]), _side("b", [(150, 50)]))
    assert not one.tested and not one.differing
    assert one.verdict == ("no test possible: 1 and 1 recording(s), a test needs >= 3 per side (perflab "
                           "profile --repeat 3); the table is descriptive only: b has +33.3% cpu-clock "
                           "period per recording over a; the largest share of the extra in hot_kernel (100.0%)")
    con = _console()
    render_diff(one, con)
    text = con.export_text()
    assert "Holm p" not in text and text.count("no test possible") == 1


def test_diff_harness_null_stays_quiet_and_planted_is_found():
    # A few dozen simulated diffs (the 200-trial figures are in docs/profile.md).
    from perflab.checks.noise import MODELS
    from perflab.checks.profile_diff import rates

    fp, det = rates(MODELS["loaded"], runs=30, per_side=5, seed=1)
    assert fp <= 0.1 and det >= 0.9
    fp3, _ = rates(MODELS["two-speed"], runs=30, per_side=3, seed=2)
    assert fp3 <= 0.1


def test_config_round_trip_through_json():
    import json

    from perflab.kernels import minihlt

    for cfg in (profile.ProfileConfig(workload=minihlt.workload(), window=Window(*event_markers(7)), cpu=1),
                profile.ProfileConfig(pid=123, children=True, log_file="/tmp/j.log", window=Window(after=1.0))):
        assert profile.ProfileConfig.from_dict(json.loads(json.dumps(cfg.as_dict()))) == cfg
