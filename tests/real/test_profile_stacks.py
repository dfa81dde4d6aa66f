"""Call stacks recorded for real: minihlt's window with a call graph, exported and read back;
Callgrind's exact call paths."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil

import pytest

from perflab.kernels.minihlt import build_minihlt
from perflab.measure.window import Window
from perflab.measure.window_perf import PerfWindowRecorder
from perflab.model import Workload
from perflab.report.profile_export import csv_text, export, folded_text, speedscope
from perflab.report.terminal.flame import tree_lines
from perflab.store import open_store
from perflab.studies import run_study
from perflab.studies.profile import study as profile
from perflab.studies.profile.stacks import tree
from perflab.studies.profile.window import event_markers

needs_perf = pytest.mark.skipif(shutil.which("perf") is None, reason="perf not installed")


def check_speedscope(doc: dict) -> None:
    """The required fields of speedscope's file format schema (file-format-schema.json):
    FileFormat.File needs $schema, shared.frames (each with a name) and profiles; a
    SampledProfile needs type "sampled", name, unit (one of ValueUnit), startValue, endValue,
    samples (lists of frame indices) and weights (one per sample)."""
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = doc["shared"]["frames"]
    assert frames and all(isinstance(f["name"], str) for f in frames)
    assert doc["profiles"]
    for p in doc["profiles"]:
        assert p["type"] == "sampled" and isinstance(p["name"], str)
        assert p["unit"] in ("none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes")
        assert isinstance(p["startValue"], (int, float)) and isinstance(p["endValue"], (int, float))
        assert len(p["samples"]) == len(p["weights"]) > 0
        assert all(isinstance(i, int) and 0 <= i < len(frames) for s in p["samples"] for i in s)
        assert p["endValue"] - p["startValue"] == sum(p["weights"])


CALLS_C = r"""
#include <stdio.h>
__attribute__((noinline)) int leaf(int n) { int s = 0; for (int i = 0; i < n; i++) s += i * i; return s; }
__attribute__((noinline)) int mid(int n) { return leaf(n) + leaf(n / 2); }
__attribute__((noinline)) int other(int n) { return leaf(n * 2); }
__attribute__((noinline)) int rec(int n) { return n ? rec(n - 1) + leaf(100) : 0; }
int main(void) { printf("%d\n", (mid(100000) + other(50000) + rec(5)) & 1); return 0; }
"""


@needs_perf
def test_real_minihlt_window_with_call_graph_exports_round_trip(tmp_path):
    minihlt = str(build_minihlt(("-O2", "-g")).path)
    store = open_store(str(tmp_path / "p.db"))
    start, stop = event_markers(1)  # event 1 is a long one (~20 ms) with the default seed
    cfg = profile.ProfileConfig(
        workload=Workload(name="minihlt", argv=(minihlt, "--events", "4", "--static-mb", "16")),
        window=Window(start, stop), call_graph="dwarf", repeat=2, annotate_top=0,
        out_dir=str(tmp_path / "out"))
    res = run_study(profile, cfg, store, PerfWindowRecorder())
    if not res.opened and os.getloadavg()[0] > 1.5:
        # perf's enable is asynchronous: on a loaded machine it landed after the ~20 ms event had
        # ended in both windows (seen once in a full suite); the study says so, and alone it opens
        pytest.skip(f"no window opened at load {os.getloadavg()[0]:.1f}: {res.message or res.failed}")
    assert res.opened and res.samples > 0
    # the folded lines of the windows sum to their samples, and name minihlt's functions under main
    assert sum(res.stacks.values()) == res.samples
    path = tmp_path / "w.folded"
    export(res, "folded", str(path))
    lines = path.read_text().splitlines()
    assert sum(int(line.rsplit(" ", 1)[1]) for line in lines) == res.samples
    assert any("main;" in line and "mh::process_event" in line for line in lines)
    assert folded_text(res) == path.read_text()
    doc_path = tmp_path / "w.speedscope.json"
    export(res, "speedscope", str(doc_path))
    doc = json.loads(doc_path.read_text())
    check_speedscope(doc)
    assert sum(doc["profiles"][0]["weights"]) == res.samples
    rows = list(csv.reader(io.StringIO(csv_text(res))))
    assert rows[0] == ["share", "samples", "symbol", "shared_object"]
    assert [r[2] for r in rows[1:]] == [t.symbol for t in res.top]
    # each recording's stacks are stored with its run: the tree comes back without perf.data
    runs = [m.result for m in store.measurements(res.campaign_id)]
    assert all(sum(r.health["stacks"].values()) == r.metrics["samples"] for r in runs)
    t = tree(res.stacks)
    main = next(n for p, n in t.walk() if p[-1] == "main")
    assert main.total >= 0.8 * res.samples  # dwarf unwinding reaches main for nearly every sample
    assert res.flame.recordings == 2 and res.flame.root.children
    assert speedscope(profile.ProfileResult.from_dict(res.as_dict())) == doc


@pytest.mark.skipif(shutil.which("valgrind") is None or shutil.which("gcc") is None, reason="valgrind or gcc missing")
def test_callgrind_stacks_are_exact_per_call_path(tmp_path):
    import subprocess

    src = tmp_path / "calls.c"
    src.write_text(CALLS_C)
    prog = tmp_path / "calls"
    subprocess.run(["gcc", "-O1", "-g", "-o", str(prog), str(src)], check=True)
    store = open_store(str(tmp_path / "c.db"))
    cfg = profile.ProfileConfig(workload=Workload(name="calls", argv=(str(prog),)), instrument="callgrind",
                                repeat=2, out_dir=str(tmp_path / "out"))
    res = run_study(profile, cfg, store, None)
    assert res.instrument == "callgrind" and res.flame is not None
    # every instruction of both recordings sits on exactly one call path
    assert sum(res.stacks.values()) == pytest.approx(2 * res.count_totals[0], abs=2)
    paths = {k.split(";main;", 1)[1]: v for k, v in res.stacks.items() if ";main;" in k}
    # leaf under its three callers, each path counted apart: mid loops n + n/2 times in it, other n
    leaf_mid, leaf_other = paths["mid;leaf"], paths["other;leaf"]
    assert leaf_other == pytest.approx(leaf_mid / 1.5, rel=0.01)
    assert any(k.endswith("leaf") and "rec" in k for k in paths)
    # exact: a function's exclusive count is the sum of its call paths' (flat and tree agree)
    leaf_flat = next(r for r in res.count_top if r.symbol == "leaf")
    leaf_paths = sum(v for k, v in res.stacks.items() if k.rsplit(";", 1)[-1] == "leaf")
    assert leaf_paths == pytest.approx(2 * leaf_flat.self_[0], abs=2)
    lines = list(tree_lines(res.flame, 0.01, unit="instructions"))
    assert "instructions in 2 recording(s)" in lines[1] and all(len(line) <= 100 for line in lines)
