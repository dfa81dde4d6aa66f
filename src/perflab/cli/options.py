"""Option types of the CLI edge: each knows its range, so bad values never reach a study.

Every type rejects nan, inf and values out of range with one line that names the option, the
value and what to give instead (click turns ``fail`` into a usage error; ``perflab.cli.main``
prints it as one line with exit status 2).
"""

from __future__ import annotations

import functools
import math
import os
import re
from dataclasses import dataclass
from typing import Any, Callable

import click

from perflab.platform.affinity import usable_cpus
from perflab.platform.sysfs import Root, format_cpulist, parse_cpulist

def default_of(config: type, name: str) -> Any:
    """The default of a study Config's field, so a click option shows and uses the one value the
    Config holds (a second copy here would drift from it)."""
    import dataclasses

    for f in dataclasses.fields(config):
        if f.name == name:
            if f.default is dataclasses.MISSING:
                raise TypeError(f"{config.__name__}.{name} has no default")
            return f.default
    raise TypeError(f"{config.__name__} has no field {name}")


def percent_default(config: type, name: str) -> str:
    """A Config's fraction field as the percent an option takes and its help shows (0.02: "2%")."""
    return f"{100 * default_of(config, name):g}%"


_UNITS_S = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "m": 60.0, "min": 60.0, "h": 3600.0}
_UNITS_B = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024**2, "mb": 1024**2,
            "mib": 1024**2, "g": 1024**3, "gb": 1024**3, "gib": 1024**3}


def _finite(text: str, param: click.Parameter | None, ctx: click.Context | None, kind: "click.ParamType") -> float:
    try:
        x = float(text)
    except (TypeError, ValueError):
        kind.fail(f"{text!r} is not a number", param, ctx)
    if not math.isfinite(x):
        kind.fail(f"{text!r} is not a finite number", param, ctx)
    return x


class Probability(click.ParamType):
    """A probability strictly between 0 and 1 (significance levels, confidence levels)."""

    name = "P"

    def convert(self, value, param, ctx):
        if isinstance(value, float) and 0 < value < 1:
            return value
        x = _finite(str(value).rstrip("%"), param, ctx, self)
        if str(value).endswith("%"):
            x /= 100
        if not 0 < x < 1:
            self.fail(f"{value!r} is not a probability: give a value between 0 and 1, e.g. 0.05", param, ctx)
        return x


class Fraction(click.ParamType):
    """A relative amount: 0.02 or 2%; at least ``low`` (exclusive unless ``inclusive``) and below ``high``."""

    name = "F"

    def __init__(self, low: float = 0.0, high: float = 10.0, inclusive: bool = False) -> None:
        self.low, self.high, self.inclusive = low, high, inclusive

    def convert(self, value, param, ctx):
        text = str(value).strip()
        x = _finite(text.rstrip("%"), param, ctx, self)
        if text.endswith("%"):
            x /= 100
        ok = (x >= self.low if self.inclusive else x > self.low) and x < self.high
        if not ok:
            low = f">= {self.low:g}" if self.inclusive else f"> {self.low:g}"
            bare = not text.endswith("%") and x >= self.high and x / 100 < self.high
            hint = f" ({text} is read as the fraction {x:g}; {text}% is {x / 100:g})" if bare else ""
            self.fail(f"{value!r} is out of range: give a fraction {low} and < {self.high:g}, e.g. 0.02 or 2%{hint}", param, ctx)
        return x


class Count(click.ParamType):
    """A whole number in [low, high]: repetitions, rounds, copies, jobs."""

    name = "N"

    def __init__(self, low: int = 1, high: int = 1_000_000) -> None:
        self.low, self.high = low, high

    def convert(self, value, param, ctx):
        if isinstance(value, int) and not isinstance(value, bool) and self.low <= value <= self.high:
            return value
        text = str(value).strip()
        if not re.fullmatch(r"[+-]?\d+", text):
            self.fail(f"{value!r} is not a whole number", param, ctx)
        n = int(text)
        if not self.low <= n <= self.high:
            self.fail(f"{value!r} is out of range: give a whole number from {self.low} to {self.high}",
                      param, ctx)
        return n


class Duration(click.ParamType):
    """A positive, finite duration: 30, 30s, 500ms, 2m, 1h (seconds as a float)."""

    name = "S"

    def __init__(self, high: float = 30 * 86400.0) -> None:
        self.high = high

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            text, unit = str(value), ""
        else:
            m = re.fullmatch(r"\s*([^a-zA-Z\s]+)\s*([a-zA-Z]*)\s*", str(value))
            if not m or m.group(2).lower() not in _UNITS_S:
                self.fail(f"{value!r} is not a duration: give seconds like 30, 30s, 500ms, 2m or 1h", param, ctx)
            text, unit = m.group(1), m.group(2).lower()
        x = _finite(text, param, ctx, self) * _UNITS_S[unit]
        if not 0 < x <= self.high:
            self.fail(f"{value!r} is out of range: give a duration > 0 and at most {self.high:g} s", param, ctx)
        return x


class Size(click.ParamType):
    """A size in bytes with an optional unit: 4096, 4K, 2M, 1GiB."""

    name = "SIZE"

    def convert(self, value, param, ctx):
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(value))
        if not m or m.group(2).lower() not in _UNITS_B:
            self.fail(f"{value!r} is not a size: give bytes like 4096, 64K, 2M or 1G", param, ctx)
        n = float(m.group(1)) * _UNITS_B[m.group(2).lower()]
        if not 1 <= n <= 1 << 50:
            self.fail(f"{value!r} is out of range: give a size from 1 byte to 1 PiB", param, ctx)
        return int(n)


class _RangeList(click.ParamType):
    """Whole numbers written with ranges, like 0-3,8 (a tuple is already converted)."""

    name = "LIST"
    what, example = "list", "0-3,8"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        try:
            ns = parse_cpulist(str(value))
        except ValueError as exc:
            self.fail(f"{value!r} is not a {self.what} ({exc}): write it like {self.example}", param, ctx)
        self._validate(value, ns, param, ctx)
        return tuple(ns)

    def _validate(self, value, ns: list[int], param, ctx) -> None:
        """Fail where the list, parsed, is not one this option takes."""


class CpuList(_RangeList):
    """A CPU list like 0-3,8 checked against the CPUs this process may run on (online and allowed)."""

    what, example = "CPU list", "0-3,8,10-11"

    def __init__(self, root: Root = Root("/"), check: bool = True) -> None:
        self.root, self.check = root, check

    def _validate(self, value, cpus: list[int], param, ctx) -> None:
        if not cpus:
            self.fail(f"{value!r} names no CPU: write it like 0-3,8,10-11", param, ctx)
        if self.check:
            usable = usable_cpus(self.root)
            bad = [c for c in cpus if c not in usable]
            if bad:
                self.fail(f"CPU {format_cpulist(bad)} is offline or not allowed here; usable CPUs: "
                          f"{format_cpulist(sorted(usable))}", param, ctx)


class CountList(_RangeList):
    """A list of whole numbers like 1,2,4-8 (copy counts), each in [low, high]."""

    what, example = "list of counts", "1,2,4-8"

    def __init__(self, low: int = 1, high: int = 65536) -> None:
        self.low, self.high = low, high

    def _validate(self, value, ns: list[int], param, ctx) -> None:
        bad = [n for n in ns if not self.low <= n <= self.high]
        if not ns or bad:
            self.fail(f"{value!r}: give counts from {self.low} to {self.high}, like 1,2,4-8", param, ctx)


PROBABILITY = Probability()
COUNT = Count()
DURATION = Duration()
SIZE = Size()


class OutputPath(click.ParamType):
    """A file perflab will write: its directory must exist and take a new file, checked up front
    so that no measurement is made for a result that could not be written ('-' is stdout)."""

    name = "PATH"

    def __init__(self, dash: bool = True) -> None:
        self.dash = dash

    def convert(self, value, param, ctx):
        text = os.fspath(value)
        if self.dash and text == "-":
            return text
        if not text or text.endswith("/") or os.path.isdir(text):
            self.fail(f"{text!r} is a directory: give a file path", param, ctx)
        parent = os.path.dirname(os.path.abspath(text))
        if not os.path.isdir(parent):
            self.fail(f"cannot write {text}: directory {parent} does not exist; create it first", param, ctx)
        probe = os.path.join(parent, f".perflab-write-test-{os.getpid()}")
        try:
            fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        except OSError as exc:
            self.fail(f"cannot write {text}: {exc.strerror} in {parent}; choose another path", param, ctx)
        os.close(fd)
        os.unlink(probe)
        return text


class OutputDir(click.ParamType):
    """A directory perflab will write into: created up front (parents too), so that a study never
    measures for an hour and then fails to save its report, and removed again where it was new,
    so that a command refused later (a bad option, --tune without root) leaves nothing behind;
    the study creates it when it starts."""

    name = "DIR"

    def convert(self, value, param, ctx):
        text = os.fspath(value)
        new = []  # the directories this check creates, deepest last
        path = os.path.abspath(text)
        while not os.path.lexists(path) and os.path.dirname(path) != path:
            new.append(path)
            path = os.path.dirname(path)
        try:
            os.makedirs(text, exist_ok=True)
        except OSError as exc:
            self.fail(f"cannot create directory {text}: {exc.strerror}; choose another --out", param, ctx)
        writable = os.access(text, os.W_OK | os.X_OK)
        for d in new:  # deepest first; one another process filled meanwhile stays
            try:
                os.rmdir(d)
            except OSError:
                break
        if not writable:
            self.fail(f"cannot write into {text}: permission denied; choose another --out", param, ctx)
        return text


class Cpu(CpuList):
    """One CPU number, checked against the CPUs this process may run on."""

    name = "N"

    def convert(self, value, param, ctx):
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not re.fullmatch(r"\s*\d+\s*", str(value)):
            self.fail(f"{value!r} is not a CPU number", param, ctx)
        return super().convert(value, param, ctx)[0]


class Positive(click.ParamType):
    """A positive, finite number (an event rate, a power in kW)."""

    name = "X"

    def convert(self, value, param, ctx):
        x = _finite(str(value), param, ctx, self)
        if x <= 0:
            self.fail(f"{value!r} must be positive", param, ctx)
        return x


# ---- the primary metric and the series (cli/metric_options.py) ----------------------------------

from perflab.cli.metric_options import MetricChoice, primary_metric_options  # noqa: E402,F401 - re-exported for the commands that import options


# ---- a study's --tune: the machine tuned before it, reset after it (platform/tune/reset.py) ------

@dataclass(frozen=True)
class Tune:
    """A command's --tune / --tune-cpus LIST: tune the machine for the study, on these benchmark
    CPUs (None: the isolated CPUs, else every CPU but the first)."""

    on: bool = False
    cpus: tuple[int, ...] | None = None


def tune_options(f: Callable) -> Callable:
    """``--tune`` and ``--tune-cpus LIST``: tune the machine before the study (its runs inside the
    benchmark cpuset) and restore it after, also on Ctrl-C and errors. The command receives them
    as one ``tune`` argument, a Tune, which it hands to tuned_study (or run_and_render)."""

    @functools.wraps(f)
    def command(*args: Any, tune: bool = False, tune_cpus: Any = None, **kwargs: Any) -> Any:
        cpus = tuple(tune_cpus) if tune_cpus else None
        return f(*args, tune=Tune(on=tune or cpus is not None, cpus=cpus), **kwargs)

    g = click.option("--tune-cpus", "tune_cpus", type=CpuList(), metavar="LIST",
                     help="Benchmark CPUs of --tune (implies it; default: the isolated CPUs, else "
                          "every CPU but the first).")(command)
    return click.option("--tune", "tune", is_flag=True,
                        help="Tune the machine before the study (as 'perflab machine tune', needs root) "
                             "and reset it after; the runs happen inside the benchmark cpuset.")(g)


def tuned_study(tune: Tune, config: Any, say: Callable[[str], None]) -> Any:
    """The command's --tune as a context manager; without it, on a machine perflab has tuned, the
    study runs inside perflab.bench; elsewhere a null context."""
    import contextlib

    ctx = click.get_current_context(silent=True)
    pinned = getattr(config, "cpus", None) or getattr(config, "per_cpu", None)
    if not tune.on:
        from perflab.platform.tune import state as tune_state

        if not os.path.exists(tune_state.state_path()):
            return contextlib.nullcontext()  # the common case: one stat, nothing imported
        from perflab.platform.tune.reset import in_bench

        return in_bench(Root("/"), pinned, say)
    from perflab.platform.tune.knobs import TuneOptions, default_cpus
    from perflab.platform.tune.reset import check_study_cpus, tuned

    root = Root("/")
    cpus = tune.cpus or tuple(default_cpus(root))
    check_study_cpus(pinned, cpus)
    command = f"{ctx.command_path} --tune" if ctx is not None else "perflab --tune"
    return tuned(root, TuneOptions(cpus=cpus), command, say)
