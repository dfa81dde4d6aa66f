"""Unit tests of perf script parsing, symbol folding, top tables, the front-end detector, diffs."""

from collections import Counter

import pytest

from perflab.studies.profile.parse import (
    Function,
    Profile,
    Sample,
    aggregate,
    annotate,
    demangle,
    diff_profiles,
    fold_symbol,
    parse_annotate,
    parse_script,
    top_functions,
)
from perflab.studies.profile.window import compile_marker, event_markers
from perflab.errors import PerflabError
from perflab.measure.window_perf import PerfWindowRecorder


@pytest.mark.parametrize("raw,folded", [
    ("hot_kernel.constprop.0", "hot_kernel"),
    ("foo.isra.3", "foo"),
    ("foo.part.12", "foo"),
    ("foo.lto_priv.0", "foo"),
    ("foo.cold", "foo"),
    ("foo.constprop.0.isra.0", "foo"),
    ("foo.isra.0.cold", "foo"),
    ("foo.part.0.constprop.1.lto_priv.2", "foo"),
    ("G4Tubs::DistanceToOut(CLHEP::Hep3Vector const&) const [clone .constprop.0]",
     "G4Tubs::DistanceToOut(CLHEP::Hep3Vector const&) const"),
    ("f(int) [clone .isra.0] [clone .cold]", "f(int)"),
    ("__sin_fma", "__sin_fma"),
    ("__log10_finite", "__log10_finite"),
    ("std::vector<int>::size() const", "std::vector<int>::size() const"),
    ("version.2", "version.2"),  # not a clone suffix
])
def test_fold_symbol(raw, folded):
    assert fold_symbol(raw) == folded


def test_demangle_and_fold_match_across_builds():
    names = demangle(["_ZN6G4Tubs13DistanceToOutEv", "_ZN6G4Tubs13DistanceToOutEv.constprop.0", "main"])
    assert names["main"] == "main"
    assert names["_ZN6G4Tubs13DistanceToOutEv"] == "G4Tubs::DistanceToOut()"
    assert fold_symbol(names["_ZN6G4Tubs13DistanceToOutEv.constprop.0"]) == "G4Tubs::DistanceToOut()"


SCRIPT = """\
 9162/9162    313.802672848:     250000      7ff9aedbc3e0 update_active.constprop.0+0x270 (/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2)
 9162/9163    313.8028:     250000  ffffffff821d1b6a mas_wr_bnode+0x126a ([kernel.kallsyms])
 9162/9162    313.803394507:     500000      7ff9aed222c5 __sin_fma+0x5 (/usr/lib/x86_64-linux-gnu/libm.so.6)
 9162/9162    313.803645088:     250000      7ff9aed222db __sin_fma+0x1b (/usr/lib/x86_64-linux-gnu/libm.so.6)
 9162/9162    313.803892084:     250000              1234 [unknown] (/tmp/jit)
not a sample line
"""


def test_parse_script_fields():
    s = parse_script(SCRIPT)
    assert len(s) == 5
    assert s[0] == Sample(313_802_672_848, 9162, 9162, 250000, 0x7FF9AEDBC3E0,
                          "update_active.constprop.0", 0x270, "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
    assert s[1].time_ns == 313_802_800_000 and s[1].tid == 9163 and s[1].dso == "[kernel.kallsyms]"
    assert s[4].sym == "[unknown]" and s[4].offset is None


def test_aggregate_and_top_threshold():
    p = aggregate(parse_script(SCRIPT))
    assert p.samples == 5 and p.period == 1_500_000
    assert p.functions["__sin_fma"].period == 750_000
    assert p.functions["__sin_fma"].offsets == Counter({5: 500_000, 0x1B: 250_000})
    assert "update_active" in p.functions  # folded
    assert "[unknown] (jit)" in p.functions
    top = top_functions(p, threshold=0.2)
    assert [r.symbol for r in top] == ["__sin_fma"]
    assert top[0].share == pytest.approx(0.5) and top[0].samples == 2 and top[0].dso == "libm.so.6"
    assert len(top_functions(p, threshold=0.01)) == 4


def _func(key, period, samples, offsets=None, dso="/x/lib.so"):
    return Function(key=key, dso=dso, samples=samples, period=period, raw_names={key},
                    offsets=Counter(offsets or {}))


def test_diff_share_of_extra():
    a = Profile(30, 300, {"f": _func("f", 100, 10), "g": _func("g", 200, 20)})
    b = Profile(40, 400, {"f": _func("f", 175, 17), "g": _func("g", 200, 20), "h": _func("h", 25, 3)})
    rows = diff_profiles(a, b)
    assert [r.symbol for r in rows] == ["f", "h", "g"]
    assert rows[0].share_of_extra == pytest.approx(0.75)
    assert rows[1].share_of_extra == pytest.approx(0.25) and rows[1].a_samples == 0
    assert rows[2].share_of_extra == 0.0
    assert sum(r.share_of_extra for r in rows) == pytest.approx(1.0)


def test_front_end_detector_from_offsets_without_disassembly():
    # perf=true prints nothing: the detector falls back to the first 16 bytes of sample offsets.
    hot_head = _func("entry_heavy", 100, 100, {0: 20, 4: 15, 12: 5, 40: 60})
    ann = annotate("/nonexistent", hot_head, PerfWindowRecorder(perf="true"))
    assert ann.head_desc == "first 16 bytes"
    assert ann.head_share == pytest.approx(0.40) and ann.front_end_hint
    flat = _func("flat", 100, 100, {0: 2, 40: 98})
    assert not annotate("/nonexistent", flat, PerfWindowRecorder(perf="true")).front_end_hint


def test_parse_annotate_rows():
    text = """ Percent |	Source code & Disassembly of libm.so.6 for cpu-clock (143 samples)
         : 5     00000000000702c0 <__sin_fma>:
    0.00 :   702c0:  push   %rbx
    0.70 :   702c5:  mov    %fs:0x28,%rax
   54.55 :   702db:  mov    0x18(%rsp),%edx
"""
    rows = parse_annotate(text)
    assert [(a, i) for a, i, _ in rows] == [
        (0x702C0, "push   %rbx"), (0x702C5, "mov    %fs:0x28,%rax"), (0x702DB, "mov    0x18(%rsp),%edx")]
    assert [s for _, _, s in rows] == pytest.approx([0.0, 0.007, 0.5455])


def test_event_markers_do_not_match_longer_numbers():
    start, stop = event_markers(7)
    rx = compile_marker(start, "--start")
    assert rx.search("AthenaEventLoopMgr   INFO  start processing event #7, run #1")
    assert not rx.search("start processing event #73, run #1")
    assert compile_marker(stop, "--stop").search("done processing event #7 in 12.5 ms")


def test_bad_regex_is_one_line_error():
    with pytest.raises(PerflabError, match=r"--start 'event \(' is not a valid regular expression"):
        compile_marker("event (", "--start")


@pytest.mark.parametrize("name,stripped", [
    ("mh::Tube::distanceToOut(double const*, double const*) const", "mh::Tube::distanceToOut"),
    ("std::vector<std::pair<int, int> >::push_back(std::pair<int, int>&&)",
     "std::vector<std::pair<int, int> >::push_back"),
    ("__sin_fma", "__sin_fma"),
])
def test_strip_params_for_perf_annotate(name, stripped):
    from perflab.studies.profile.parse import strip_params

    assert strip_params(name) == stripped
