"""Metric extraction: named-group regexes applied to a run's stdout/stderr.

Each named group of a pattern that matches becomes a float metric; when a pattern matches
several times the last match wins (a program's final summary line beats its progress lines).
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

from perflab.errors import PerflabError
from perflab.model import MetricPattern

_STREAMS = ("stdout", "stderr", "both")


def compile_patterns(regexes: Iterable[str | MetricPattern]) -> tuple[MetricPattern, ...]:
    """Validate regexes (``stdout:REGEX`` / ``stderr:REGEX`` pick one stream) into MetricPatterns."""
    out: list[MetricPattern] = []
    for item in regexes:
        if isinstance(item, MetricPattern):
            pattern = item
        else:
            stream = "both"
            text = str(item)
            head, sep, rest = text.partition(":")
            if sep and head in ("stdout", "stderr"):
                stream, text = head, rest
            pattern = MetricPattern(regex=text, stream=stream)
        if pattern.stream not in _STREAMS:
            raise PerflabError(
                f"metric stream '{pattern.stream}' is unknown: use stdout, stderr or both"
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
    """Metrics named by the patterns' groups; the last match of each pattern wins."""
    values: dict[str, float] = {}
    for pattern in patterns:
        if pattern.stream == "stdout":
            text = stdout
        elif pattern.stream == "stderr":
            text = stderr
        else:
            text = stdout + ("\n" if stdout and stderr else "") + stderr
        # re keeps its own compile cache, so a per-run compile is a dict lookup.
        last = None
        for last in re.finditer(pattern.regex, text, re.MULTILINE):
            pass
        if last is None:
            continue
        for name, raw in last.groupdict().items():
            value = _to_float(raw)
            if value is not None:
                values[name] = value
    return values
