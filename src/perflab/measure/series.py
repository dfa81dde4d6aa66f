"""Per-event series: a workload's event lines (one per event) kept per run, compactly.

A series regex names, in its groups, what an event line says: ``event`` (the event's id),
``ms`` / ``s`` / ``us`` (the time the event took, as the program measured it) or ``count`` (a
progress count: the events done so far). Every matching line becomes one row: the id (or the
line's position), the time (or NaN) and the moment perflab read the line (nanoseconds after the
run started, from the spawn server's arrival stamps; 0 where it gave none). A program that only
prints ``event N`` still gives a rate over time from the stamps, as fine as its output is
flushed: stdio buffers a pipe or file in 4 KiB blocks unless the program flushes each line.

The stored form is model/series.py's (the store reads it too).
"""

from __future__ import annotations

import math
import re
import struct
from bisect import bisect_left
from dataclasses import dataclass
from typing import Iterable, Sequence

from perflab.errors import PerflabError
from perflab.model import MetricPattern
from perflab.model.series import EventSeries, decode, encode, series_length  # noqa: F401 (used here and re-exported)
from perflab.stats.steady import Warmup, warmup

TIME_GROUPS = {"ms": 1.0, "s": 1000.0, "us": 0.001}  # unit -> ms


def compile_series(regexes: Iterable[str | MetricPattern]) -> tuple[MetricPattern, ...]:
    """Validate series regexes: each must name ``event``, a time (ms, s, us) or ``count``."""
    out = []
    for item in regexes:
        pattern = item if isinstance(item, MetricPattern) else MetricPattern(regex=str(item))
        try:
            rx = re.compile(pattern.regex)
        except re.error as exc:
            raise PerflabError(f"series regex {pattern.regex!r} does not compile ({exc}): fix the pattern") from None
        if not set(rx.groupindex) & {"event", "count", *TIME_GROUPS}:
            raise PerflabError(
                f"series regex {pattern.regex!r} names no event, count or time group: "
                r"e.g. 'done event (?P<event>\d+) in (?P<ms>[\d.]+) ms'")
        out.append(MetricPattern(regex=pattern.regex, stream=pattern.stream, aggregate="series"))
    return tuple(out)


def read_stamps(path: str) -> list[tuple[int, int]]:
    """The spawn server's arrival stamps: (bytes of stdout read so far, monotonic ns) per read."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return []
    return [struct.unpack_from("=qq", data, i) for i in range(0, len(data) - 15, 16)]


def extract_series(patterns: Sequence[MetricPattern], stdout: str, start_ns: int = 0,
                   stamps: Sequence[tuple[int, int]] = ()) -> EventSeries:
    """Every line of ``stdout`` one of the patterns matches, in output order, with the moment its
    last byte was read (the first stamp whose offset reaches past the line), minus ``start_ns``."""
    ids: list[int] = []
    ms: list[float] = []
    at: list[int] = []
    if not patterns:
        return EventSeries(ids, ms, at)
    offsets = [s[0] for s in stamps]
    ascii_text = stdout.isascii()  # else a line's byte offset is counted as the matches go
    chars = byte = 0
    matches = re.finditer(patterns[0].regex, stdout, re.MULTILINE) if len(patterns) == 1 else _each(patterns, stdout)
    for m in matches:
        groups = m.groupdict()
        event = _number(groups.get("event"))
        count = _number(groups.get("count"))
        ident = int(event) if event is not None else int(count) if count is not None else len(ids)
        t = math.nan
        for unit, scale in TIME_GROUPS.items():
            value = _number(groups.get(unit))
            if value is not None:
                t = value * scale
                break
        stamp = 0
        if offsets:
            end = m.end()
            if ascii_text:
                byte = end
            else:
                byte += len(stdout[chars:end].encode("utf-8", "surrogateescape"))
                chars = end
            i = bisect_left(offsets, byte)
            stamp = (stamps[i][1] if i < len(stamps) else stamps[-1][1]) - start_ns
        ids.append(ident)
        ms.append(t)
        at.append(max(0, stamp))
    return EventSeries(ids, ms, at)


def _each(patterns: Sequence[MetricPattern], text: str):
    found = [m for p in patterns for m in re.finditer(p.regex, text, re.MULTILINE)]
    return iter(sorted(found, key=lambda m: m.start()))


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


# ---- one run's numbers: what every study can rank by -------------------------------------------

#: the metrics a series gives each run (steady_rate, higher is better, is what a farm buys)
SERIES_METRICS = ("steady_rate", "run_rate", "warmup_events", "event_ms_p50", "event_ms_p99", "event_ms_max")
#: the series metrics a study may rank by: (higher is better, unit)
SERIES_RANKED = {"steady_rate": (True, "events/s"), "run_rate": (True, "events/s"),
                 "event_ms_p50": (False, "ms"), "event_ms_p99": (False, "ms"), "event_ms_max": (False, "ms"),
                 "warmup_events": (False, "events")}
BLOCKS = 200  # stamps-only series are judged in at most this many blocks of events


@dataclass
class Steady:
    """One run's steady part: its events, their seconds, the warm-up, the per-event times."""

    warmup: Warmup
    events: float  # events in the steady part
    seconds: float  # their time
    times: list[float]  # per-event ms of the steady part (block means where stamps-only)
    ids: list[int]  # the ids of those times (a block's first event where stamps-only)
    from_stamps: bool  # times come from arrival stamps, not from the program
    block: int = 1  # events a time stands for (stamps-only series are judged in blocks)


def steady_part(series: EventSeries, skip_events: int | None = None, seed: int = 0) -> Steady | None:
    """The steady part of one run (None: fewer than 3 events or no time of any kind)."""

    n = len(series)
    if n < 3:
        return None
    if series.has_times:
        times = [t for t in series.ms if not math.isnan(t)]
        ids = [i for i, t in zip(series.ids, series.ms) if not math.isnan(t)]
        m, stamped = 1, False
    elif series.has_stamps:
        # Arrival gaps come in bursts (output is flushed a block at a time): judge blocks of events.
        # The first event's gap runs from the start: the program's start-up is part of its warm-up.
        m = max(1, n // BLOCKS)
        at = [0, *series.at_ns]
        times = [(at[j + m] - at[j]) / 1e6 / m for j in range(0, n - m + 1, m)]
        ids = [series.ids[j] for j in range(0, n - m + 1, m)]
        stamped = True
    else:
        return None
    if skip_events is not None:
        k = min(len(times), -(-skip_events // m))
        w = Warmup(k * m, "skip")
    else:
        w = warmup(times, seed=seed)
        k = w.events
        w = Warmup(k * m, w.how, w.p, w.slower)
    rest, rest_ids = times[k:], ids[k:]
    if not rest:
        return None
    secs = sum(rest) / 1000 * m
    return Steady(w, float(len(rest) * m), secs, rest, rest_ids, stamped, m)


def run_metrics(series: EventSeries, wall_s: float, skip_events: int | None = None) -> dict[str, float]:
    """The series' numbers for one run, as metrics (empty where it matched no line)."""
    n = len(series)
    if not n:
        return {}
    # Measures only: compare and the gate test every metric (an event id or a count of lines
    # would be comparisons without meaning in their Holm family); the ids are in the series.
    out = {"run_rate": n / wall_s if wall_s > 0 else math.nan}
    part = steady_part(series, skip_events)
    if part is None:
        return out
    times = sorted(part.times)
    out["warmup_events"] = float(part.warmup.events)
    if part.seconds > 0:
        out["steady_rate"] = part.events / part.seconds
    out["event_ms_p50"] = times[len(times) // 2]
    out["event_ms_p99"] = times[min(len(times) - 1, math.ceil(len(times) * 0.99) - 1)]
    out["event_ms_max"] = times[-1]
    return out
