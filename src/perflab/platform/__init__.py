"""Everything that reads the machine: topology, metadata, feature probes."""

import os

from perflab.startup import lazy_attributes

# Loaded when first asked for (PEP 562): a `perflab run` whose machine capture is cached for the
# boot reads neither the topology nor the probes (platform/machine.py, bench/startup.sh).
__getattr__ = lazy_attributes(__name__, {
    "capture": "host", "read_topology": "topology", "Topology": "topology_types",
})


def cache_dir() -> str:
    """perflab's cache: $PERFLAB_CACHE, else $XDG_CACHE_HOME/perflab, else ~/.cache/perflab (the
    build cache under builds/ and helpers/, the per-boot machine capture under host/)."""
    env = os.environ.get("PERFLAB_CACHE")
    if env:
        return env
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(xdg, "perflab")
