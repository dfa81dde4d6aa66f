"""What the store hands back: Campaign, Measurement, Artifact.

Times are UTC (store/values.py turns SQLite's naive datetimes back into UTC). These records are
what `perflab results`, `report` and `compare` read; `perflab run` writes through store/lite.py
and never builds one, so this module is not on its path (tests/real/test_startup.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from perflab.model import RunResult


@dataclass(frozen=True)
class Campaign:
    """One invocation of a study: its config, status, summary and timestamps."""

    id: int
    study: str
    name: str
    status: str
    config: dict
    summary: dict | None
    host_id: int | None
    parent_id: int | None
    started: datetime
    finished: datetime | None
    n_measurements: int | None = 0  # None: not counted (Store.campaigns(lean=True))
    labels: dict = field(default_factory=dict)  # fleet name, batch job ids, host label


@dataclass(frozen=True)
class Measurement:
    """One stored run: its resume key (label, params, rep) and what it measured."""

    id: int
    campaign_id: int
    label: str
    params: dict
    rep: int
    result: RunResult
    created: datetime | None = None


@dataclass(frozen=True)
class Artifact:
    """A file a study produced (perf.data, bundle, report), by path and content hash."""

    id: int
    campaign_id: int
    kind: str
    path: str
    sha256: str | None
    size: int | None
    meta: dict = field(default_factory=dict)
    created: datetime | None = None
