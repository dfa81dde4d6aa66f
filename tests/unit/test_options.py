"""The CLI edge's option types: every value is either accepted in range or refused in one line."""

from __future__ import annotations

import math

import click
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perflab.cli.options import Count, CountList, CpuList, Duration, Fraction, Probability, Size
from perflab.platform.sysfs import MAX_CPU_ID, Root, parse_cpulist


def _outcome(kind: click.ParamType, text: str):
    try:
        return "ok", kind.convert(text, None, None)
    except click.BadParameter as exc:
        msg = exc.format_message()
        assert "\n" not in msg and msg
        return "bad", msg


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=12), st.floats(allow_nan=True, allow_infinity=True).map(repr)))
def test_probability_accepts_only_open_unit_interval(text):
    status, value = _outcome(Probability(), text)
    if status == "ok":
        assert 0 < value < 1 and math.isfinite(value)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=12), st.integers().map(str), st.floats().map(repr)))
def test_count_accepts_only_whole_numbers_in_range(text):
    status, value = _outcome(Count(1, 1000), text)
    if status == "ok":
        assert isinstance(value, int) and 1 <= value <= 1000


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=12),
                 st.tuples(st.floats(allow_nan=True, allow_infinity=True),
                           st.sampled_from(["", "s", "ms", "m", "h", "x"])).map(lambda t: f"{t[0]!r}{t[1]}")))
def test_duration_is_positive_and_finite(text):
    status, value = _outcome(Duration(), text)
    if status == "ok":
        assert 0 < value <= 30 * 86400 and math.isfinite(value)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789-,:", max_size=16))
def test_cpulist_parse_never_explodes(text):
    try:
        cpus = parse_cpulist(text)
    except ValueError as exc:
        assert "\n" not in str(exc)
        return
    assert cpus == sorted(set(cpus)) and all(0 <= c <= MAX_CPU_ID for c in cpus)


@pytest.mark.parametrize("kind, text, ok", [
    (Probability(), "0.05", 0.05), (Probability(), "5%", 0.05), (Probability(), "2", None),
    (Probability(), "nan", None), (Probability(), "0", None),
    (Fraction(), "2%", 0.02), (Fraction(), "-0.1", None), (Fraction(), "inf", None),
    (Count(), "3", 3), (Count(), "0", None), (Count(), "-2", None), (Count(), "1e9", None),
    (Count(), "99999999999999999999", None),
    (Duration(), "500ms", 0.5), (Duration(), "2m", 120.0), (Duration(), "0", None), (Duration(), "-1", None),
    (Duration(), "nan", None), (Duration(), "1e308h", None),
    (Size(), "2M", 2 << 20), (Size(), "4KiB", 4096), (Size(), "0", None), (Size(), "12 parsecs", None),
    (CountList(), "1,2,4-6", (1, 2, 4, 5, 6)), (CountList(), "0-999999999999", None), (CountList(), "x", None),
])
def test_option_types_table(kind, text, ok):
    status, value = _outcome(kind, text)
    assert (status == "ok") == (ok is not None), value
    if ok is not None:
        assert value == ok


def test_cpulist_checks_the_machine(tmp_path):
    (tmp_path / "sys/devices/system/cpu").mkdir(parents=True)
    (tmp_path / "sys/devices/system/cpu/online").write_text("0-3\n")
    kind = CpuList(Root(str(tmp_path)))
    assert _outcome(kind, "1-2") == ("ok", (1, 2))
    status, msg = _outcome(kind, "999")
    assert status == "bad" and "999" in msg and "usable CPUs: 0-3" in msg
    status, msg = _outcome(kind, "0-99999999999")
    assert status == "bad" and "beyond any machine" in msg
    (tmp_path / "sys/devices/system/cpu/online").write_text("0-x\n")
    from perflab.errors import PerflabError

    with pytest.raises(PerflabError, match="malformed CPU list in .*online"):
        kind.convert("0", None, None)


@settings(max_examples=200, deadline=None)
@given(st.one_of(
    st.binary(max_size=200),
    st.builds(lambda k, v: f"[workload.w]\ncommand = [\"true\"]\n{k} = {v}\n".encode(),
              st.sampled_from(["metrics", "primary_metric", "shell", "env", "cwd", "higher_is_better",
                               "fork_arg", "checksum_metric", "build", "command"]),
              st.sampled_from(["nan", "inf", "-inf", "1e999", "[]", "{}", "\"\"", "[1, 2]", "true",
                               "\"x\"", "[\"(?P<a>1)\"]", "{ regex = 1 }", "99999999999999999999999"])),
))
def test_toml_loader_accepts_or_refuses_in_one_line(tmp_path_factory, data):
    from perflab.errors import PerflabError
    from perflab.workloads import list_workloads

    path = tmp_path_factory.mktemp("toml") / "perflab.toml"
    path.write_bytes(data)
    try:
        list_workloads(str(path))
    except PerflabError as exc:
        assert "\n" not in str(exc) and path.name in str(exc)
