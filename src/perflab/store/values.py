"""How values become the store's JSON, and a machine its fingerprint.

JSON is canonical (sorted keys) so that a run's params are its resume key. Times are stored in UTC.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, is_dataclass
from datetime import datetime, timezone
from typing import Any

from perflab.startup import sha256

STATUSES = ("running", "done", "interrupted", "failed")

# RunResult fields stored as plain columns of `measurements` (metrics/counters are JSON).
_RESULT_COLUMNS = (
    "wall_ns", "user_s", "sys_s", "maxrss_kb", "minflt", "majflt", "nvcsw", "nivcsw",
    "exit_code", "signal", "timed_out", "start_ns", "end_ns", "stdout_tail", "stderr_tail",
    "suspect",
)
# Metadata keys that change between two looks at the same machine: not part of its identity.
_VOLATILE = ("load", "steal", "uptime", "time", "date", "free", "avail", "idle")


def _jsonable(obj: Any) -> Any:
    """Plain JSON values; NaN/inf become null because PostgreSQL's json type rejects them."""
    if obj is None or isinstance(obj, (bool, str, int)):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        items = sorted(obj, key=repr) if isinstance(obj, (set, frozenset)) else obj
        return [_jsonable(v) for v in items]
    if is_dataclass(obj) and not isinstance(obj, type):
        return _jsonable(asdict(obj))
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, datetime):
        return str(obj)
    if hasattr(obj, "item"):  # numpy scalars
        return _jsonable(obj.item())
    if hasattr(obj, "tolist"):  # numpy arrays
        return _jsonable(obj.tolist())
    if hasattr(obj, "_asdict"):
        return _jsonable(obj._asdict())
    return str(obj)


def dumps(obj: Any) -> str:
    """JSON text of any study value (the engine's json_serializer)."""
    return json.dumps(_jsonable(obj), sort_keys=True, allow_nan=False)


def canonical_params(params: dict | None) -> str:
    """Canonical JSON of a measurement's parameters (sorted keys, no spaces): the resume key."""
    return json.dumps(_jsonable(params or {}), sort_keys=True, separators=(",", ":"), allow_nan=False)


def host_identity(metadata: dict | None, topology: dict | None) -> tuple[dict, dict | None, str, str]:
    """(metadata, topology, hostname, fingerprint) as stored: the same machine, the same print."""
    metadata = _jsonable(metadata or {})
    topology = _jsonable(topology) if topology is not None else None
    hostname = str(metadata.get("hostname") or os.uname().nodename)
    stable = {k: v for k, v in metadata.items() if not any(w in k.lower() for w in _VOLATILE)}
    fingerprint = sha256(
        dumps({"hostname": hostname, "metadata": stable, "topology": topology}).encode()).hexdigest()
    return metadata, topology, hostname, fingerprint


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _utc(dt: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes; every time stored is UTC, so say so."""
    if dt is not None and dt.tzinfo is None:
        return dt.replace(tzinfo=timezone.utc)
    return dt
