"""Results store: hosts, campaigns, measurements and artifacts, in SQLite or PostgreSQL.

``open_store(None)`` opens ./perflab.db; ``open_store("postgresql://u@host/db")`` a server.
SQLAlchemy is imported only when a store is opened, so importing this package is cheap.
"""

import importlib
from typing import Any

from perflab.store.schema import SCHEMA_VERSION
from perflab.store.values import canonical_params, dumps

# Loaded when first asked for (PEP 562): `perflab run` writes an existing SQLite file through
# store/lite.py and needs neither the full store (db.py and its mixins, SQLAlchemy) nor the
# records it hands back (their dataclasses cost some 2 ms of every start).
_HOME = {"Store": "db", "open_store": "db", "Artifact": "rows", "Campaign": "rows",
         "Measurement": "rows"}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'perflab.store' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"perflab.store.{home}"), name)
    globals()[name] = value
    return value


__all__ = [
    "Artifact", "Campaign", "Measurement", "Store", "SCHEMA_VERSION", "canonical_params", "dumps",
    "open_store",
]
