"""`profile diff` compares like with like: recordings at two speeds are weighed to one mix of them."""

from __future__ import annotations

import io
import json
import random

import pytest
from rich.console import Console

from perflab.report.terminal.profile import render_diff
from perflab.studies.profile.diff import ProfileDiffConfig, ProfileDiffResult, Side, diff
from perflab.studies.profile.parse import aggregate, parse_script

EV = "/opt/ev/bin/ev"


def _recording(hot: int, helper: int):
    lines = "\n".join(f" 1/1 1.{i:09d}: 250000 401000 {sym}+0x10 ({EV})"
                      for i, sym in enumerate(["hot_kernel"] * hot + ["helper"] * helper))
    return aggregate(parse_script(lines))


def _side(label: str, slow: list[bool], rng: random.Random, hot: int = 100, helper: int = 50) -> Side:
    """One campaign's recordings: each at the fast speed or 1.5x slower (every function alike),
    with a little sampling noise."""
    out = []
    for s in slow:
        f = 1.5 if s else 1.0
        out.append(_recording(round(hot * f) + rng.randint(-2, 2), round(helper * f) + rng.randint(-1, 1)))
    return Side(label, out, "cpu-clock")


def _console() -> Console:
    return Console(file=io.StringIO(), width=110, record=True, color_system=None)


def test_a_mix_of_speeds_is_not_taken_for_extra_period():
    rng = random.Random(3)
    # the same code; A ran mostly fast, B mostly slow: the plain means differ by about 22 %
    a = _side("a", [False] * 6 + [True] * 2, rng)
    b = _side("b", [False] * 2 + [True] * 6, rng)
    plain_a = sum(p.period for p in a.profiles) / 8
    plain_b = sum(p.period for p in b.profiles) / 8
    assert plain_b / plain_a - 1 > 0.2
    d = diff(ProfileDiffConfig("a", "b"), a, b)
    assert d.speeds is not None and d.speeds["line"] == "compared within two speeds: 50% and 50% of runs"
    assert d.speeds["recordings"] == ([[6, 2], [2, 6]] if not d.swapped else [[2, 6], [6, 2]])
    assert abs(d.extra_fraction) < 0.03
    assert "(compared within two speeds: 50% and 50% of runs; each side's mean at the same mix of speeds)" in d.verdict
    assert d.tested and not d.differing  # shares do not move with the speed
    con = _console()
    render_diff(d, con)
    text = " ".join(con.export_text().split())  # as one line, whatever the console's width
    assert "samples are means per recording at the same mix of speeds (8 and 8 recordings; compared " \
           "within two speeds: 50% and 50% of runs)" in text
    back = ProfileDiffResult.from_dict(json.loads(json.dumps(d.as_dict())))
    assert back.verdict == d.verdict and back.speeds == d.speeds


def test_a_real_extra_is_found_at_either_mix():
    rng = random.Random(4)
    # B's hot_kernel takes 20 % more at both speeds: +13 % per recording at any one mix
    a = _side("a", [False] * 6 + [True] * 2, rng)
    b = _side("b", [False] * 2 + [True] * 6, rng, hot=120)
    d = diff(ProfileDiffConfig("a", "b"), a, b)
    assert not d.swapped and d.speeds is not None
    assert d.extra_fraction == pytest.approx(20 / 150, abs=0.02)
    assert d.rows[0].symbol == "hot_kernel"
    assert [t.symbol for t in d.differing][:1] == ["hot_kernel"]
    # the plain means would have said about +39 %
    assert sum(p.period for p in b.profiles) / sum(p.period for p in a.profiles) - 1 > 0.3


def test_one_speed_keeps_plain_means_and_says_nothing_of_speeds():
    rng = random.Random(5)
    a = _side("a", [False] * 8, rng)
    b = _side("b", [False] * 8, rng, hot=110)
    d = diff(ProfileDiffConfig("a", "b"), a, b)
    assert d.speeds is None and "speeds" not in d.verdict
    assert d.a_period == pytest.approx(sum(p.period for p in a.profiles) / 8)
    con = _console()
    render_diff(d, con)
    assert "samples are means per recording (8 and 8 recordings)" in con.export_text()


def test_too_few_recordings_for_speeds_keep_plain_means():
    rng = random.Random(6)
    a = _side("a", [False, False, True], rng)
    b = _side("b", [True, True, False], rng)
    d = diff(ProfileDiffConfig("a", "b"), a, b)
    assert d.speeds is None  # 6 recordings pooled: too few to find two speeds


def test_welch_p_on_nearly_equal_sides_says_nothing_on_the_terminal():
    # scipy warns of precision loss for sides like these (3 recordings of one event); the user
    # sees the diff, not a RuntimeWarning
    import warnings

    from perflab.studies.profile.diff import welch_p

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        p = welch_p([12.0, 12.0, 12.000000000000002], [13.0, 13.0, 13.0])
    assert 0.0 <= p <= 1.0
