"""Results store: hosts, campaigns, measurements and artifacts, in SQLite or PostgreSQL.

``open_store(None)`` opens ./perflab.db; ``open_store("postgresql://u@host/db")`` a server.
SQLAlchemy is imported only when a store is opened, so importing this package is cheap.
"""

import importlib
from typing import Any

from perflab.store.rows import Artifact, Campaign, Measurement, canonical_params, dumps
from perflab.store.schema import SCHEMA_VERSION


def __getattr__(name: str) -> Any:
    # Store and open_store (db.py and its mixins) load when first asked for (PEP 562): `perflab
    # run` writes an existing SQLite file through store/lite.py and never needs them.
    if name not in ("Store", "open_store"):
        raise AttributeError(f"module 'perflab.store' has no attribute {name!r}")
    value = getattr(importlib.import_module("perflab.store.db"), name)
    globals()[name] = value
    return value


__all__ = [
    "Artifact", "Campaign", "Measurement", "Store", "SCHEMA_VERSION", "canonical_params", "dumps",
    "open_store",
]
