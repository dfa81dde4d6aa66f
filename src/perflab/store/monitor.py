"""The machine monitor's samples in the store: written in batches while a study runs (from the
monitor's thread: each batch is its own transaction on a pooled connection), read back in time
order for the report, the CSV/JSON export and the energy figures."""

from __future__ import annotations

from typing import Any, Sequence

from perflab.store import tx


class MonitorMethods:
    """The Store's monitor methods (mixed into Store)."""

    # Set or defined by Store (store/db.py), which mixes this class in.
    engine: Any
    t: Any
    _sa: Any

    def add_monitor_samples(self, campaign_id: int, rows: Sequence[dict[str, Any]]) -> None:
        """Store samples (dicts with t_ns, wall, phase and sample) in one transaction."""
        values = [{"campaign_id": campaign_id, "t_ns": int(r["t_ns"]), "wall": float(r["wall"]),
                   "phase": str(r["phase"]), "sample": r.get("sample") or {}} for r in rows]
        if values:
            table = self.t["monitor_samples"]
            tx.write(self, lambda conn: conn.execute(table.insert(), values))

    def monitor_samples(self, campaign_id: int) -> list[dict[str, Any]]:
        """A campaign's samples, oldest first, as written (empty when it was not monitored)."""
        sa = self._sa
        table = self.t["monitor_samples"]
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(table.c.t_ns, table.c.wall, table.c.phase, table.c.sample)
                                .where(table.c.campaign_id == campaign_id)
                                .order_by(table.c.t_ns, table.c.id)).all()
        return [{"t_ns": int(r.t_ns), "wall": float(r.wall), "phase": r.phase, "sample": r.sample or {}}
                for r in rows]
