"""The garbage collector during start-up, for the `perflab` command.

Start-up imports about 250 modules whose objects all live until exit. At CPython's default
thresholds the collector runs dozens of times while they load, and each full collection walks
every object made so far, freeing nothing. ``begin()`` (the entry point, before any import) makes
the collector wait for 100,000 allocations instead of 700; ``end()`` (a command, once its modules
are loaded and before it measures) freezes what exists by then out of later collections and puts
the thresholds back. A command that never calls ``end()`` still collects, just less often.
Measured: `perflab run --runs 1 -- true` starts about 5 % sooner (docs/run.md, bench/startup.sh).
"""

from __future__ import annotations

import gc

_saved: tuple[int, ...] | None = None


def begin() -> None:
    global _saved
    if _saved is None:
        _saved = gc.get_threshold()
        gc.set_threshold(100_000, *_saved[1:])


def end() -> None:
    """Freeze the start-up's objects and restore the thresholds (no-op without ``begin()``)."""
    global _saved
    if _saved is not None:
        gc.freeze()
        gc.set_threshold(*_saved)
        _saved = None
