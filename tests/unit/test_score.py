"""The suite score: HEPscore's arithmetic on the public reports, both import layouts, the interval,
the flags (tests/data/hepscore/README.md says where the reports come from)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from perflab.errors import PerflabError
from perflab.studies.score import hepjson, method
from perflab.studies.score.analysis import analyse_workloads
from perflab.studies.score.flags import copy_groups
from perflab.studies.score.result import ScoreResult, WorkloadScore

DATA = Path(__file__).parents[1] / "data" / "hepscore"
RESULT = DATA / "hepscore_result_expected_output.json"
SUITE = DATA / "ref_summary_output.json"


def test_hepscore_result_recomputes_its_own_score():
    r = hepjson.load(str(RESULT))
    assert r.file_score == 872.266
    assert abs(r.score - 872.266) < 0.001
    assert r.mismatch == []
    ratios = {w.name: w.ratio for w in r.workloads}
    # the median repetition's ratio, each rounded to 4 decimals as hep-score rounds it
    assert ratios["atlas-gen-bmk"] == 2.7204 and ratios["cms-gen-sim-bmk"] == 2.4182
    assert [w.chosen for w in r.workloads][:2] == [[0], [1]]
    assert r.scaling == 355 and r.reference_machine.endswith("E5-2630 v3 @ 2.40GHz")
    assert [w.copies for w in r.workloads] == [64, 64, 16, 16, 16, 64]


def test_a_changed_score_is_flagged():
    doc = json.loads(RESULT.read_text())
    doc["score"] = 880.0
    r = hepjson.parse(doc, "edited.json")
    assert r.mismatch and "880" in r.mismatch[0] and "872.266" in r.mismatch[0]


def test_the_interval_covers_the_score_and_carries_its_level():
    r = hepjson.load(str(RESULT))
    assert r.level == 0.95
    lo, hi = r.score_ci
    assert lo < r.score < hi
    assert 0.002 < (hi - lo) / r.score < 0.05  # 3 repetitions of 6 workloads, about 1 % apart
    for w in r.workloads:
        assert w.ratio_ci[0] < w.ratio < w.ratio_ci[1]


def test_suite_report_imports_with_host_and_copies_in_two_groups():
    r = hepjson.load(str(SUITE))
    assert r.file_score == 875.8939 and abs(r.score - 875.8939) < 0.001
    assert r.host["cpu_model"] == "Intel(R) Xeon(R) CPU E5-2695 v2 @ 2.40GHz"
    assert r.host["cpus"] == 48 and r.host["threads_per_core"] == 2
    # its score_per_core divides by 64 CPUs: said, not copied
    assert any("64" in m and "48" in m for m in r.mismatch)
    assert r.score_per_core == round(r.score / 48, 4)
    assert r.score_ci is None and "one value per workload" in r.cannot_tell
    hs06 = next(g for g in r.copy_groups if g.name == "hs06_32 453.povray")
    assert hs06.n == 48 and len(hs06.groups) == 2
    fast, slow = hs06.groups
    assert len(fast["copies"]) + len(slow["copies"]) == 48
    assert fast["median"] == 11.2 and slow["median"] == 10.5
    assert "SMT" in hs06.sentence


def test_bad_input_is_one_line():
    for doc, words in (([1, 2], "not an object"), ({"x": 1}, "neither layout"),
                       ({"profiles": {"DB12": {}}}, "without a 'hepscore' profile"),
                       ({"benchmarks": {"a": {}}, "wl-scores": {"a": {"x": 1}}}, "malformed")):
        with pytest.raises(PerflabError) as exc:
            hepjson.parse(doc, "f.json")
        assert words in str(exc.value) and "\n" not in str(exc.value)


def test_method_geomean_and_median():
    assert method.weighted_geomean([2, 8]) == pytest.approx(4)
    assert method.weighted_geomean([2, 8], [3, 1]) == pytest.approx(2 ** 0.75 * 8 ** 0.25)
    assert method.median_pick([3, 1, 2]) == (2, [2])
    assert method.median_pick([4, 1, 2, 3]) == (2.5, [2, 3])


def _suite(reps: dict[str, list[float]]) -> ScoreResult:
    wls = [WorkloadScore(name=k, references={"r": 1.0}, values=[{"r": v} for v in vs]) for k, vs in reps.items()]
    return analyse_workloads(ScoreResult(suite="t", source="test", scaling=100, reference_machine="m", workloads=wls))


def test_a_disagreeing_repetition_is_named_and_a_quiet_suite_is_not():
    quiet = {f"w{i}": [1.0 + 0.002 * ((i + j) % 3 - 1) for j in range(3)] for i in range(6)}
    assert _suite(quiet).disagreeing == []
    bad = dict(quiet)
    bad["w2"] = [1.0, 0.85, 1.001]
    flagged = _suite(bad).disagreeing
    assert [(d.workload, d.rep) for d in flagged] == [("w2", 1)]
    assert flagged[0].ratio_to_others == pytest.approx(0.85 / math.sqrt(1.001), rel=1e-6)


def test_one_repetition_gives_a_score_and_says_why_no_interval():
    r = _suite({"a": [2.0], "b": [3.0]})
    assert r.score == pytest.approx(100 * math.sqrt(6), abs=1e-4)
    assert r.score_ci is None and "--reps 3" in r.cannot_tell


def test_copies_at_one_speed_name_nothing_and_few_copies_cannot_tell():
    one = copy_groups("x", [10.0 + 0.01 * (i % 5) for i in range(40)])
    assert one.groups == [] and one.slow == [] and "one speed" in one.sentence
    few = copy_groups("x", [10, 5])
    assert few.groups == [] and "too few" in few.sentence


def test_result_round_trips_through_its_dict():
    r = hepjson.load(str(SUITE))
    back = ScoreResult.from_dict(json.loads(json.dumps(r.as_dict())))
    assert back.as_dict() == r.as_dict()


def test_export_reimports_to_the_same_figures(tmp_path):
    r = hepjson.load(str(RESULT))
    out = tmp_path / "e.json"
    hepjson.write(r, str(out))
    doc = json.loads(out.read_text())
    assert doc["json_version"] == "v2.0" and doc["profiles"]["hepscore"]["score"] == r.score
    assert doc["profiles"]["hepscore"]["wl-scores"]["atlas-gen-bmk"] == {"gen": 1044.6459, "gen_ref": 384.0}
    back = hepjson.load(str(out))
    assert back.score == r.score and back.score_ci == r.score_ci and back.mismatch == []
    # the suite part alone (a pipeline that drops perflab's key) gives the same score
    del doc["perflab"]
    assert abs(hepjson.parse(doc).score - r.score) < 0.001


def test_harness_quiet_suites_cover_and_find_the_planted_flags():
    from perflab.checks.score import check

    c = check("quiet", runs=30)
    assert c["coverage"] >= 0.85 and c["bad_rep_found"] >= 0.85 and c["copy_found"] >= 0.9
    assert c["bad_rep_false"] <= 0.15 and c["copy_false"] <= 0.15


def test_slow_copies_named_with_the_cores_they_shared():
    from perflab.studies.score.analysis import with_cores
    from perflab.studies.score.flags import CopyGroups

    g = CopyGroups("c", 16, [{"copies": list(range(8)), "median": 1.0}, {"copies": list(range(8, 16)), "median": 0.9}],
                   [], "two speeds")
    smt = [[i] for i in range(8)] + [[i] for i in range(4)] + [[i] for i in range(4, 8)]  # copies 8-15 share cores 0-7
    # copies 0-7 share too: every copy shares, so the slow ones are not "exactly" the sharing ones
    assert "as did others" in with_cores(g, smt).sentence
    alone = [[i + 100] for i in range(8)] + [[i // 2] for i in range(8)]  # 8-15 in pairs on cores 0-3
    assert "exactly those" in with_cores(g, alone).sentence
    assert "not SMT siblings" in with_cores(g, [[i] for i in range(16)]).sentence


def test_hepscore_copy_summaries_give_the_slowest_copy_per_repetition():
    from perflab.report.terminal.score import flag_lines

    r = hepjson.load(str(RESULT))
    atlas = r.workloads[0]
    assert atlas.copy_spread[0] == {"min": 11.655, "median": 17.1381, "max": 19.1571, "count": 64.0}
    cms = next(w for w in r.workloads if w.name == "cms-digi-bmk")  # its wl-stats under throughput_score
    assert cms.copy_spread[1]["count"] == 16 and cms.copy_spread[1]["median"] == 0.5219
    line = next(x for x in flag_lines(r) if x.startswith("copies, slowest"))
    assert "atlas-gen-bmk 0.68 0.64 0.67 of 64" in line and "no copy can be named" in line
