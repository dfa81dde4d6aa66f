"""Metric extraction: named-group regexes applied to a run's stdout/stderr.

Each named group of a pattern that matches becomes a float metric. When a pattern matches
several times the matches are combined by the pattern's aggregate: ``last`` by default (a
program's final summary line beats its progress lines), or first, sum, max, min, count. A
carriage return ends a line too: progress meters (video encoders, downloaders) redraw one
terminal line with ``\r``, and each redraw is a match of its own.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

from perflab.errors import PerflabError
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
        for m in matches:
            for name, raw in m.groupdict().items():
                value = _to_float(raw)
                if value is not None:
                    seen.setdefault(name, []).append(value)
        for name, xs in seen.items():
            values[name] = _combine(pattern.aggregate, xs)
    return values


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
