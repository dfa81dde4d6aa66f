"""Everything that reads the machine: topology, metadata, feature probes."""

import os


def cache_dir() -> str:
    """perflab's cache: $PERFLAB_CACHE, else $XDG_CACHE_HOME/perflab, else ~/.cache/perflab (the
    build cache under builds/ and helpers/, the per-boot machine capture under host/)."""
    env = os.environ.get("PERFLAB_CACHE")
    if env:
        return env
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(xdg, "perflab")
