"""Start-up of the `perflab` command: the garbage collector, names packages load on first use, and
two standard-library functions without the modules that come with them.

Start-up imports about 250 modules whose objects all live until exit. At CPython's default
thresholds (a collection every 700 allocations) `perflab run --runs 1 -- true` collected 43 times
and freed 453 of some 20,000 objects. ``begin()`` (the entry point, before any import) makes the
collector wait for 100,000 allocations instead: 2 collections. ``end()`` (a command, once its
modules are loaded and before it measures) freezes the 33,000 objects that exist by then out of
every later collection, the one at exit included, and puts the thresholds back. A command that
never calls ``end()`` still collects, just less often. Measured: `perflab run --runs 1 -- true`
takes 14 % less (A/B interleaved, 50 pairs; docs/run.md).

``which`` is shutil.which and ``sha256`` hashlib.sha256 without their modules, each of which
cost about a tenth of `perflab run`'s own start-up: importing shutil imports bz2, lzma and zlib
(3.4 ms here), and hashlib loads OpenSSL's libcrypto (3.5 ms); finding a tool on PATH and hashing
a cache key need neither. ``sha256`` is for the short keys a run's start-up hashes (the machine
cache, the host fingerprint, the spawn helper): on bulk data (files, source trees, bundles)
OpenSSL's SHA-256 is 5.6x faster here (64 MiB: 47 against 265 ms), so those use hashlib.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from typing import Any, Callable

try:  # CPython's own SHA-256, which hashlib falls back to: the same digests, no OpenSSL to load
    from _sha256 import sha256  # noqa: F401 (re-exported)  CPython <= 3.11
except ImportError:
    try:
        from _sha2 import sha256  # noqa: F401 (re-exported)  CPython >= 3.12
    except ImportError:
        from hashlib import sha256  # noqa: F401 (re-exported: startup.sha256)

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


def which(cmd: str, path: str | None = None) -> str | None:
    """shutil.which on POSIX: the path of an executable ``cmd`` on PATH (or ``path``), else None;
    a ``cmd`` with a directory part is checked as it is."""

    def executable(p: str) -> bool:
        return os.access(p, os.F_OK | os.X_OK) and not os.path.isdir(p)

    if os.path.dirname(cmd):
        return cmd if executable(cmd) else None
    if path is None:
        path = os.environ.get("PATH")
        if path is None:
            try:
                path = os.confstr("CS_PATH")
            except (AttributeError, ValueError):
                path = os.defpath
    if not path:
        return None
    seen = set()
    for d in path.split(os.pathsep):
        if d in seen:
            continue
        seen.add(d)
        name = os.path.join(d, cmd)
        if executable(name):
            return name
    return None
