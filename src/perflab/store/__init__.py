"""Results store: hosts, campaigns, measurements and artifacts, in SQLite or PostgreSQL.

``open_store(None)`` opens ./perflab.db; ``open_store("postgresql://u@host/db")`` a server.
SQLAlchemy is imported only when a store is opened, so importing this package is cheap.
"""

from perflab.startup import lazy_attributes
from perflab.store.schema import SCHEMA_VERSION
from perflab.store.values import canonical_params, dumps

# Loaded when first asked for (PEP 562): `perflab run` writes an existing SQLite file through
# store/lite.py and needs neither the full store (db.py and its mixins, SQLAlchemy) nor the
# records it hands back (their dataclasses cost some 2 ms of every start).
_HOME = {"Store": "db", "open_store": "db", "Artifact": "rows", "Campaign": "rows",
         "Measurement": "rows"}
__getattr__ = lazy_attributes(__name__, _HOME)


__all__ = [
    "Artifact", "Campaign", "Measurement", "Store", "SCHEMA_VERSION", "canonical_params", "dumps",
    "open_store",
]
