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
