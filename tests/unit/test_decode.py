"""The generic decoder of a result's JSON form (studies.base.decode): nested dataclasses, CIs,
tuples, dicts and optional values from the fields' type hints."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

import pytest

from perflab.stats import CI
from perflab.studies.base import decode
from perflab.studies.micro.study import AbiDiff, Cell, MicroResult


@dataclass
class Inner:
    name: str
    ci: CI | None = None
    sizes: tuple[int, ...] = ()


@dataclass
class Outer:
    inner: Inner
    rows: list[Inner] = field(default_factory=list)
    by_name: dict[str, Inner] = field(default_factory=dict)
    pair: tuple[str, float] = ("", 0.0)
    maybe: Inner | None = None
    ratio: float = 1.0
    either: int | str = 0


def _round_trip(value):
    return json.loads(json.dumps(asdict(value)))


def test_nested_dataclasses_tuples_dicts_and_intervals_come_back_equal():
    value = Outer(Inner("a", CI(0.9, 1.1, 0.95), (1, 2)), [Inner("b")], {"c": Inner("c", CI(1, 2, 0.5))},
                  ("x", 2.5), None, 3.0, "s")
    back = decode(Outer, _round_trip(value))
    assert back == value
    assert isinstance(back.inner.sizes, tuple) and isinstance(back.pair, tuple)
    assert isinstance(back.by_name["c"].ci, CI) and back.maybe is None


def test_unknown_keys_are_dropped_missing_ones_defaulted_and_ints_read_as_floats():
    back = decode(Outer, {"inner": {"name": "a", "gone": 1}, "added_later": True, "ratio": 2})
    assert back == Outer(Inner("a"), ratio=2.0) and isinstance(back.ratio, float)


def test_a_missing_required_field_is_an_error_not_a_guess():
    with pytest.raises(TypeError):
        decode(Inner, {"ci": None})


def test_micro_result_round_trips_through_its_json():
    res = MicroResult(abis=["m64", "m32"], skipped={"mx32": "kernel"}, runs=4, notes=["n"],
                      cells=[Cell("sin", "m64", 4, 12.5, CI(12.0, 13.0, 0.875), 8e7)],
                      diffs=[AbiDiff("sin", "m32", "m64", 3.0, CI(1.0, 5.0, 0.875), 0.03, 0.06, 0.5, False)],
                      thresholds={"m64": {"mmap": 131072}})
    assert MicroResult.from_dict(json.loads(json.dumps(res.as_dict()))) == res


def test_a_cores_scan_stored_in_the_older_form_still_renders():
    """A scan stored before its rows kept change_ci, slow_rounds, block_levels, slow_blocks,
    others_out and pause_rounds (and before the timeline, speeds and block_margin): the missing
    fields take their defaults, and its report section shows its rows and its sentence."""
    from types import SimpleNamespace

    from perflab.report.build import build_section
    from perflab.studies.cores.result import CoresResult

    ci = {"low": 1.1, "high": 1.3, "level": 0.96875}
    row = {"cpu": 1, "socket": 0, "core": 1, "node": 0, "siblings": [1], "runs": 6, "failed": 0, "median": 12.5,
           "ci": {"low": 12.0, "high": 13.0, "level": 0.96875}, "ratio": 1.2, "ratio_ci": ci, "rounds": 6,
           "slower_rounds": 6, "p_value": 0.01, "p_adjusted": 0.02, "disturbed": [], "normal": [], "verdict": "slow",
           "mode_shares": []}
    older = {"mode": "sequential", "unit": "ms", "rounds": 6, "stopped": "rounds", "cpus": [row],
             "slow": [{"core": 1, "socket": 0, "node": 0, "cpus": [1], "siblings": [1], "ratio": 1.2, "ratio_ci": ci,
                       "p_adjusted": 0.02, "rounds": 6, "slower_rounds": 6}],
             "disturbances": [{"cpu": 1, "rounds": [2], "ratio": 1.5, "intermittent": False}],
             "runs": 6, "verdict": "slow core 1 (CPU 1)", "notes": ["older"]}
    result = CoresResult.from_dict(older)
    assert result.cpus[0].slow_rounds == () and result.cpus[0].change_ci is None and result.timeline is None
    assert result.slow[0].ratio_ci == CI(1.1, 1.3, 0.96875) and result.cpus[0].siblings == (1,)
    camp = SimpleNamespace(id=3, study="cores", status="done", summary=older, labels={})
    sec = build_section(camp, [])
    (table,) = sec.tables
    assert table.rows[0][:3] == [1, 0, 1] and table.rows[0][-2:] == ["slow", "worse"]
    assert sec.verdict == "slow core 1 (CPU 1); CPU 1 was disturbed in round 2 (cost ratio 1.5)"
    assert sec.notes == ["older"] and [p.title for p in sec.plots][0].startswith("Per-CPU cost")


def test_a_float_the_store_wrote_as_null_reads_back_as_nan():
    """The store writes NaN as null (PostgreSQL's json has no NaN): a float field reads it back as
    NaN, so a stored cores timeline whose span was never set renders, and an optional one stays None."""
    import math

    from perflab.studies.cores.timeline import Timeline

    back = decode(Outer, {"inner": {"name": "a"}, "ratio": None})
    assert math.isnan(back.ratio) and back.maybe is None
    tl = decode(Timeline, json.loads(json.dumps({k: (None if isinstance(v, float) and math.isnan(v) else v)
                                                 for k, v in asdict(Timeline()).items()})))
    assert math.isnan(tl.span_s)
