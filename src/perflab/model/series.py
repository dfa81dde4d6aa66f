"""A run's per-event series as a value and its compact stored form.

Storage (``encode``): three integer columns (id deltas, times in microseconds, stamp deltas in
microseconds), each zlib-compressed: repeated deltas compress to almost nothing, so a run of a
million events costs a few bytes an event in the store (tests/test_series.py measures it).
"""

from __future__ import annotations

import math
import struct
import zlib
from array import array
from dataclasses import dataclass

_MAGIC = b"PLS1"


@dataclass
class EventSeries:
    """One run's events in order: ids, per-event times in ms (NaN: not printed), arrival in ns."""

    ids: list[int]
    ms: list[float]
    at_ns: list[int]

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def has_times(self) -> bool:
        return any(not math.isnan(t) for t in self.ms)

    @property
    def has_stamps(self) -> bool:
        return any(self.at_ns)


def encode(series: EventSeries) -> bytes:
    """The compact stored form: magic, count, then three zlib-compressed int64 delta columns."""
    n = len(series)
    ids = array("q", (b - a for a, b in zip([0, *series.ids], series.ids)))
    us = array("q", (-1 if math.isnan(t) else round(t * 1000) for t in series.ms))
    stamps_us = [s // 1000 for s in series.at_ns]
    at = array("q", (b - a for a, b in zip([0, *stamps_us], stamps_us)))
    cols = [zlib.compress(c.tobytes(), 6) for c in (ids, us, at)]
    return _MAGIC + struct.pack("=qIII", n, *map(len, cols)) + b"".join(cols)


def series_length(blob: bytes) -> int:
    """The number of events in an encoded series, read from its header."""
    return struct.unpack_from("=q", blob, 4)[0] if blob[:4] == _MAGIC else 0


def decode(blob: bytes) -> EventSeries:
    """The inverse of ``encode`` (times to the microsecond, stamps to the microsecond)."""
    if not blob:
        return EventSeries([], [], [])
    if blob[:4] != _MAGIC:
        raise ValueError("not a perflab event series")
    n, la, lb, lc = struct.unpack_from("=qIII", blob, 4)
    pos = 4 + struct.calcsize("=qIII")
    cols = []
    for length in (la, lb, lc):
        col = array("q")
        col.frombytes(zlib.decompress(blob[pos:pos + length]))
        cols.append(col)
        pos += length
    ids, acc = [], 0
    for d in cols[0]:
        acc += d
        ids.append(acc)
    ms = [math.nan if u < 0 else u / 1000 for u in cols[1]]
    at, acc = [], 0
    for d in cols[2]:
        acc += d
        at.append(acc * 1000)
    assert len(ids) == n
    return EventSeries(ids, ms, at)
