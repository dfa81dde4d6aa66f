"""Writes that survive a database server restart, and database errors as one line.

A PostgreSQL server restarted mid-campaign (a farm's database maintenance, a failover) drops
every connection; the next write fails with an OperationalError. A write is retried for a bounded
time (PERFLAB_DB_RETRY_S, default 30 s) with backoff. A write whose COMMIT was sent but not
answered may or may not have landed: before writing again, ``committed`` looks for it, so a retry
never stores a measurement twice. SQLite is never retried: its failures (disk full, read-only
file) do not heal by waiting, and its locks already wait (busy_timeout).
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Literal, TypeVar

from perflab.errors import PerflabError

T = TypeVar("T")
RESUME_HINT = "committed measurements are kept; fix it and finish with 'perflab resume'"


class StoreUnreachable(PerflabError):
    """A write the database server did not take (lost, unreachable, the retries spent); a fleet
    task's store catches it to keep the rest of its runs in a shard (store/failover.py)."""


def one_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    text = " ".join(str(orig).split())
    return text[:300] or type(orig).__name__


def retry_seconds() -> float:
    try:
        value = float(os.environ.get("PERFLAB_DB_RETRY_S", "30"))
    except ValueError:
        return 30.0
    return value if 0 <= value < 86400 else 30.0


def write(store: Any, work: Callable[[Any], T], committed: Callable[[Any], T | None] | None = None) -> T:
    """Run ``work(conn)`` in one transaction, retrying a lost PostgreSQL connection."""
    sa = store._sa
    retry = retry_seconds() if store.dialect == "postgresql" else 0.0
    deadline = time.monotonic() + retry
    delay = 0.1
    while True:
        try:
            with store.engine.begin() as conn:
                return work(conn)
        except (sa.exc.OperationalError, sa.exc.InterfaceError) as exc:
            lost = getattr(exc, "connection_invalidated", False) or store.dialect == "postgresql"
            if not lost or time.monotonic() + delay > deadline:
                what = "is unreachable" if lost else "failed to write"
                waited = f" after retrying for {retry:g} s" if retry else ""
                raise StoreUnreachable(
                    f"results store {store.display} {what}{waited}: {one_line(exc)}; {RESUME_HINT}"
                ) from None
            time.sleep(delay)
            delay = min(delay * 2, 2.0)
            if committed is not None:
                try:
                    with store.engine.connect() as conn:
                        found = committed(conn)
                except (sa.exc.OperationalError, sa.exc.InterfaceError):
                    continue
                if found is not None:
                    return found


class Tx:
    """engine.begin() whose database errors become one-line PerflabErrors."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.cm = store.engine.execution_options(perflab_write=True).begin()

    def __enter__(self) -> Any:
        try:
            return self.cm.__enter__()
        except self.store._sa.exc.OperationalError as exc:
            raise StoreUnreachable(
                f"results store {self.store.display} is unreachable: {one_line(exc)}; "
                f"{RESUME_HINT}"
            ) from None

    def __exit__(self, et: Any, ev: Any, tb: Any) -> Literal[False]:
        op_error = self.store._sa.exc.OperationalError
        try:
            self.cm.__exit__(et, ev, tb)
        except op_error as exc:
            ev = exc
        if isinstance(ev, op_error):
            raise StoreUnreachable(
                f"results store {self.store.display} failed to write: {one_line(ev)}; "
                f"{RESUME_HINT}"
            ) from None
        return False
