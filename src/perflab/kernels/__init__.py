"""C and C++ sources shipped as package data, and the build cache that compiles them.

Submodules load when first used through the package (PEP 562), e.g. ``kernels.abi``: a `perflab
run` whose machine capture is cached for this boot never builds or probes anything, and skips
the build cache's imports.
"""

import importlib
import os
from types import ModuleType

_SUBMODULES = ("abi", "build")

# The ABI probes' names (kernels.abi.PROBES has their functions): a machine record that has them
# all needs no probe, and no import of the build cache, to tell.
ABI_PROBE_NAMES = ("x32", "m32")


def cache_dir() -> str:
    """$PERFLAB_CACHE, else $XDG_CACHE_HOME/perflab, else ~/.cache/perflab."""
    env = os.environ.get("PERFLAB_CACHE")
    if env:
        return env
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(xdg, "perflab")


def __getattr__(name: str) -> ModuleType:
    if name not in _SUBMODULES:
        raise AttributeError(f"module 'perflab.kernels' has no attribute {name!r}")
    return importlib.import_module(f"perflab.kernels.{name}")
