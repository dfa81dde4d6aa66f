"""Sizes in words, as a sentence and a table write them alike: a study's verdict (frontend's knee
and its simulated I1) and the report's cells print the same '384 KiB'."""

from __future__ import annotations


def fmt_bytes(b: int | float | None) -> str:
    """1.5 MiB, 384 KiB, 512 B."""
    if b is None:
        return "-"
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= size:
            return f"{b / size:.4g} {unit}"
    return f"{int(b)} B"
