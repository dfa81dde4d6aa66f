"""Start-up of the `perflab` command: the garbage collector, and names packages load on first use.

Start-up imports about 250 modules whose objects all live until exit. At CPython's default
thresholds (a collection every 700 allocations) `perflab run --runs 1 -- true` collected 43 times
and freed 453 of some 20,000 objects. ``begin()`` (the entry point, before any import) makes the
collector wait for 100,000 allocations instead: 2 collections. ``end()`` (a command, once its
modules are loaded and before it measures) freezes the 33,000 objects that exist by then out of
every later collection, the one at exit included, and puts the thresholds back. A command that
never calls ``end()`` still collects, just less often. Measured: `perflab run --runs 1 -- true`
takes 14 % less (A/B interleaved, 50 pairs; docs/run.md).
"""

from __future__ import annotations

import gc
import importlib
import sys
from typing import Any, Callable

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


def lazy_attributes(package: str, homes: dict[str, str]) -> Callable[[str], Any]:
    """A package's ``__getattr__`` (PEP 562) that loads each name in ``homes`` from its submodule
    (``homes[name]``) when first asked for, and keeps it in the package. What a command does not
    use then costs it nothing at start-up (bench/startup.sh). A lazy name must not also name a
    submodule: importing that submodule would set the package's attribute to the module."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
