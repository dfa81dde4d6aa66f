"""Runs in the store: one row per run, committed as it completes (or, for runs that went back
to back, journalled first: measure/journal.py), read back as RunResults; the resume key of a
run is (label, canonical params, rep)."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any, Iterator

from perflab.model.series import series_length
from perflab.model import RunResult
from perflab.store import tx
from perflab.store.rows import Measurement
from perflab.store.values import _RESULT_COLUMNS, _jsonable, _now, _utc, canonical_params


class MeasurementMethods:
    """The Store's measurement methods (mixed into Store)."""

    # Set or defined by Store (store/db.py), which mixes this class in.
    engine: Any
    t: Any
    _sa: Any

    def add_measurement(
        self, campaign_id: int, result: RunResult, params: dict | None = None, rep: int = 0,
        label: str = "",
    ) -> int:
        """Store one run; committed before returning so a crash keeps it."""
        values = self._row(campaign_id, result, params, rep, label)
        table = self.t["measurements"]

        def insert(conn: Any) -> int:
            # A bare insert() with a parameter dict: SQLAlchemy compiles it once and caches it,
            # where .values(**values) builds a new statement per run (0.44 -> 0.13 ms per row).
            mid = int(conn.execute(table.insert(), values).inserted_primary_key[0])
            self._add_series(conn, campaign_id, mid, result)
            return mid

        return tx.write(self, insert, lambda conn: self._committed(conn, values))

    def add_measurements(self, campaign_id: int, runs: list[tuple[RunResult, dict | None, int, str]]) -> None:
        """Store the copies of one concurrent point in one transaction: a crash keeps all or none,
        so a resumed study never finds half a point (result, params, rep, label per copy)."""
        rows = [self._row(campaign_id, *run) for run in runs]
        if rows:
            table = self.t["measurements"]

            def insert(conn: Any) -> None:
                if not any(run[0].series for run in runs):
                    conn.execute(table.insert(), rows)
                    return
                for row, run in zip(rows, runs):  # each row's id for its series
                    self._add_series(conn, campaign_id, int(conn.execute(table.insert(), row).inserted_primary_key[0]), run[0])

            tx.write(self, insert, lambda conn: self._committed(conn, rows[0]))

    def _add_series(self, conn: Any, campaign_id: int, measurement_id: int, result: RunResult) -> None:
        """The run's per-event series, in the transaction of its row (none: nothing written)."""
        if result.series:
            conn.execute(self.t["run_series"].insert(), dict(
                measurement_id=measurement_id, campaign_id=campaign_id,
                events=series_length(result.series), data=result.series))

    def series(self, campaign_id: int) -> dict[int, bytes]:
        """The stored per-event series of a campaign's runs, by measurement id."""
        t = self.t["run_series"]
        with self.engine.connect() as conn:
            rows = conn.execute(self._sa.select(t.c.measurement_id, t.c.data).where(t.c.campaign_id == campaign_id)).all()
        return {int(r.measurement_id): bytes(r.data) for r in rows}

    def _committed(self, conn: Any, values: dict[str, Any]) -> int | None:
        """The id of a row already written (a commit whose answer the lost connection ate)."""
        c = self.t["measurements"].c
        row = conn.execute(self._sa.select(c.id).where(
            c.campaign_id == values["campaign_id"], c.label == values["label"], c.params == values["params"],
            c.rep == values["rep"], c.wall_ns == values["wall_ns"], c.start_ns == values["start_ns"],
        )).first()
        return None if row is None else int(row.id)

    def _row(self, campaign_id: int, result: RunResult, params: dict | None, rep: int, label: str) -> dict[str, Any]:
        values: dict[str, Any] = {name: getattr(result, name) for name in _RESULT_COLUMNS}
        values["wall_ns"] = int(values["wall_ns"])
        values.update(
            campaign_id=campaign_id, label=label or "", params=canonical_params(params), rep=int(rep),
            metrics=_jsonable(result.metrics or {}), counters=_jsonable(result.counters or {}),
            energy=_jsonable(result.energy) if result.energy else None,
            health=_jsonable(result.health) if result.health else None,
            failure=result.failure, created=_now(),
        )
        return values

    def measurements(self, campaign_id: int) -> list[Measurement]:
        """All runs of a campaign in the order they were recorded."""
        sa = self._sa
        m = self.t["measurements"]
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(m).where(m.c.campaign_id == campaign_id).order_by(m.c.id)).all()
        return [self._measurement(r) for r in rows]

    def iter_measurements(self, campaign_id: int) -> Iterator[Measurement]:
        yield from self.measurements(campaign_id)

    @staticmethod
    def _measurement(row: Any) -> Measurement:
        known = {f.name for f in fields(RunResult)}
        kw = {name: getattr(row, name) for name in _RESULT_COLUMNS if name in known}
        kw["timed_out"] = bool(kw.get("timed_out"))
        kw["suspect"] = bool(kw.get("suspect"))
        kw["energy"] = {k: v for k, v in (row.energy or {}).items() if v is not None}
        kw["health"] = dict(row.health or {})
        kw["stdout_tail"] = kw.get("stdout_tail") or ""
        kw["stderr_tail"] = kw.get("stderr_tail") or ""
        kw["metrics"] = {k: v for k, v in (row.metrics or {}).items() if v is not None}
        kw["counters"] = {k: v for k, v in (row.counters or {}).items() if v is not None}
        return Measurement(
            id=row.id, campaign_id=row.campaign_id, label=row.label, params=json.loads(row.params),
            rep=row.rep, result=RunResult(**kw), created=_utc(row.created),
        )

    def done_keys(self, campaign_id: int) -> set[tuple[str, str, int]]:
        """(label, canonical params JSON, rep) of every stored run: what a resume may skip."""
        sa = self._sa
        m = self.t["measurements"]
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(m.c.label, m.c.params, m.c.rep).where(m.c.campaign_id == campaign_id)
            ).all()
        return {(r.label, r.params, int(r.rep)) for r in rows}
