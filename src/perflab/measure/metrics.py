"""Metric extraction: named-group regexes applied to a run's stdout/stderr.

Each named group of a pattern that matches becomes a float metric. When a pattern matches
several times the matches are combined by the pattern's aggregate: ``last`` by default (a
program's final summary line beats its progress lines), or first, sum, max, min, count. A
carriage return ends a line too: progress meters (video encoders, downloaders) redraw one
terminal line with ``\r``, and each redraw is a match of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Sequence

from perflab.errors import PerflabError
from perflab.measure.series import SERIES_METRICS
from perflab.model import MetricPattern

_STREAMS = ("stdout", "stderr", "both")
AGGREGATES = ("last", "first", "sum", "max", "min", "count")


def parse_pattern(text: str) -> MetricPattern:
    """``[stdout:|stderr:][last:|first:|sum:|max:|min:|count:]REGEX`` as a MetricPattern."""
    stream, aggregate = None, None
    for _ in range(2):
        head, sep, rest = text.partition(":")
        if sep and head in ("stdout", "stderr") and stream is None:
            stream, text = head, rest
        elif sep and head in AGGREGATES and aggregate is None:
            aggregate, text = head, rest
    return MetricPattern(regex=text, stream=stream or "both", aggregate=aggregate or "last")


def compile_patterns(regexes: Iterable[str | MetricPattern]) -> tuple[MetricPattern, ...]:
    """Validate regexes (``stdout:REGEX`` / ``stderr:REGEX`` pick one stream) into MetricPatterns."""
    out: list[MetricPattern] = []
    for item in regexes:
        pattern = item if isinstance(item, MetricPattern) else parse_pattern(str(item))
        if pattern.stream not in _STREAMS:
            raise PerflabError(
                f"metric stream '{pattern.stream}' is unknown: use stdout, stderr or both"
            )
        if pattern.aggregate not in AGGREGATES:
            raise PerflabError(
                f"metric aggregate '{pattern.aggregate}' is unknown: use one of {', '.join(AGGREGATES)}"
            )
        try:
            rx = re.compile(pattern.regex, re.MULTILINE)
        except re.error as exc:
            raise PerflabError(
                f"metric regex {pattern.regex!r} does not compile ({exc}): fix the pattern"
            ) from None
        if not rx.groupindex:
            raise PerflabError(
                f"metric regex {pattern.regex!r} has no named group: "
                "name the value, e.g. '(?P<events_per_s>[0-9.]+) events/s'"
            )
        out.append(pattern)
    return tuple(out)


def _to_float(text: str | None) -> float | None:
    if text is None:
        return None
    # Thousands separators ("1,234") are common in program summaries.
    try:
        return float(text.replace(",", "").replace("_", "").strip())
    except ValueError:
        return None


def extract(patterns: Sequence[MetricPattern], stdout: str, stderr: str) -> dict[str, float]:
    """Metrics named by the patterns' groups, repeated matches combined by each aggregate."""
    values: dict[str, float] = {}
    for pattern in patterns:
        if pattern.stream == "stdout":
            text = stdout
        elif pattern.stream == "stderr":
            text = stderr
        else:
            text = stdout + ("\n" if stdout and stderr else "") + stderr
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        # re keeps its own compile cache, so a per-run compile is a dict lookup.
        matches = re.finditer(pattern.regex, text, re.MULTILINE)
        if pattern.aggregate == "last":
            last = None
            for last in matches:
                pass
            matches = iter(() if last is None else (last,))
        elif pattern.aggregate == "first":
            first = next(matches, None)
            matches = iter(() if first is None else (first,))
        seen: dict[str, list[float]] = {}
        odd: dict[str, str] = {}
        for m in matches:
            for name, raw in m.groupdict().items():
                value = _to_float(raw)
                if value is not None:
                    seen.setdefault(name, []).append(value)
                elif raw is not None:
                    odd.setdefault(name, raw)
        for name, xs in seen.items():
            values[name] = _combine(pattern.aggregate, xs)
        _note(pattern, seen, odd, text)
    return values


# ---- hygiene: which regexes never gave a number ------------------------------------------------
#
# A regex that never matches would otherwise vanish without a word, and a study would rank by
# wall time while the user believes it ranks by fps. extract() keeps, for this process, how
# often each group got a number and one example of what it saw instead; hygiene() turns that
# into warning lines (and the error for the primary metric) once the runs are done.

@dataclass
class _Seen:
    """One group of one regex over this process's runs."""

    regex: str
    runs: int = 0
    numbers: int = 0
    not_number: str | None = None  # the first text it captured that is not a number
    example: str = ""  # the last line of the first output it gave no number for


_LEDGER: dict[tuple[str, str], _Seen] = {}


def _note(pattern: MetricPattern, seen: dict[str, list[float]], odd: dict[str, str], text: str) -> None:
    for name in re.compile(pattern.regex, re.MULTILINE).groupindex:
        rec = _LEDGER.setdefault((pattern.regex, name), _Seen(pattern.regex))
        rec.runs += 1
        if name in seen:
            rec.numbers += 1
            continue
        if rec.not_number is None and name in odd:
            rec.not_number = odd[name]
        if not rec.example:
            lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
            rec.example = (lines[-1][:100] if lines else "") or "(no output)"


_SERIES_RUNS = [0, 0]  # runs with a series regex, and those whose series gave the metrics
_SERIES_WHY: list[str] = []  # why a run's series gave none, the first time


def note_series(gave: bool, why: str = "") -> None:
    """One run with series regexes: whether its lines gave the series metrics (measure/series.py),
    and if not, why."""
    _SERIES_RUNS[0] += 1
    _SERIES_RUNS[1] += bool(gave)
    if not gave and why and not _SERIES_WHY:
        _SERIES_WHY.append(why)


def reset_ledger() -> None:
    """Forget what earlier extractions saw (a new command, or a test)."""
    _LEDGER.clear()
    _SERIES_RUNS[:] = [0, 0]
    _SERIES_WHY.clear()


def hygiene(primary: str | None = None) -> tuple[list[str], str | None]:
    """Warning lines for groups that gave a number in no run, and the error line when the
    primary metric is one of them (None when it matched, or was not asked for)."""
    warnings: list[str] = []
    error = None
    if primary in SERIES_METRICS:
        if not _SERIES_RUNS[0]:
            return warnings, (f"primary metric {primary} comes from a per-event series: give --series "
                              "REGEX with (?P<event>...) and (?P<ms>...), or series = [...] in perflab.toml")
        if not _SERIES_RUNS[1]:
            why = _SERIES_WHY[0] if _SERIES_WHY else "the series regex matched too few event lines"
            return warnings, (f"primary metric {primary} was never measured in {_SERIES_RUNS[0]} runs: {why}")
        primary = None
    for (regex, name), rec in _LEDGER.items():
        if rec.numbers or not rec.runs:
            continue
        runs = f"{rec.runs} run{'s' if rec.runs != 1 else ''}"
        if rec.not_number is not None:
            why = f"gave no number in {runs}: it captured {rec.not_number!r} for {name}"
        else:
            why = f"matched in none of {runs} (output ends: {rec.example!r})"
        line = f"metric regex '{regex}' {why}"
        if name != primary and line not in warnings:  # once per regex, not once per group
            warnings.append(line)
        elif error is None:
            error = (f"primary metric {name} was never measured: regex '{regex}' {why}; fix the regex "
                     "or choose another with --primary-metric")
    if primary is not None and error is None and not any(
            n == primary and r.numbers for (_, n), r in _LEDGER.items()) and any(r.runs for r in _LEDGER.values()):
        error = f"primary metric {primary} is captured by none of the metric regexes: add (?P<{primary}>...)"
    return warnings, error


def _combine(aggregate: str, xs: list[float]) -> float:
    if aggregate == "sum":
        return float(sum(xs))
    if aggregate == "max":
        return max(xs)
    if aggregate == "min":
        return min(xs)
    if aggregate == "count":
        return float(len(xs))
    return xs[-1]  # last or first: already reduced to one match
