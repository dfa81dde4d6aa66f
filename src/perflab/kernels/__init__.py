"""C and C++ sources shipped as package data, and the build cache that compiles them.

Submodules load when first used through the package (PEP 562), e.g. ``kernels.abi``: a `perflab
run` whose machine capture is cached for this boot never builds or probes anything, and skips
the build cache's imports.
"""

import importlib
from types import ModuleType

_SUBMODULES = ("abi", "build")

# The ABI probes' names (kernels.abi.PROBES has their functions): a machine record that has them
# all needs no probe, and no import of the build cache, to tell.
ABI_PROBE_NAMES = ("x32", "m32")


def __getattr__(name: str) -> ModuleType:
    if name not in _SUBMODULES:
        raise AttributeError(f"module 'perflab.kernels' has no attribute {name!r}")
    return importlib.import_module(f"perflab.kernels.{name}")
