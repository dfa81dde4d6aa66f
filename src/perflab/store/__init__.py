"""Results store: hosts, campaigns, measurements and artifacts, in SQLite or PostgreSQL.

``open_store(None)`` opens ./perflab.db; ``open_store("postgresql://u@host/db")`` a server.
SQLAlchemy is imported only when a store is opened, so importing this package is cheap.
"""

from perflab.store.db import Store, open_store
from perflab.store.rows import Artifact, Campaign, Measurement, canonical_params, dumps
from perflab.store.schema import SCHEMA_VERSION

__all__ = [
    "Artifact", "Campaign", "Measurement", "Store", "SCHEMA_VERSION", "canonical_params", "dumps",
    "open_store",
]
