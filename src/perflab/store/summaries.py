"""Per-campaign summaries of one throughput quantity, computed in the store (SQL window functions).

A summary is what a fleet report needs of a host's runs without reading them: the count, the
median, and the order statistics that bound the median's distribution-free interval at 95% and
at 97.5% (the ranks of perflab.stats.peers, Hollander & Wolfe's binomial interval), per label
and over all labels. The database sorts each campaign's values (``row_number() OVER (PARTITION
BY campaign ORDER BY value)``) and returns only the rows at those ranks: six per summary.

The quantity is higher-is-better throughput: a ``*_per_s`` metric of the runs, or ``runs_per_s``
(1e9 / wall_ns). Only successful runs count (exit 0, no signal, not timed out, no failure).
A campaign finished as done through the full store writes its summaries then (a few hundred
runs: milliseconds); a report finds any that are missing (a merged shard, an older store,
``perflab run``'s SQLite fast path) and writes them in batches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from perflab.stats.peers import median_ci_positions
from perflab.store import tx

RUNS_PER_S = "runs_per_s"
# The levels whose order statistics are kept: a host's headline interval (95%), and each median's
# interval in the slow-host ratio, which is at least 95% by Bonferroni over two 97.5% intervals.
HEADLINE_LEVEL = 0.95
TEST_LEVEL = 1.0 - (1.0 - HEADLINE_LEVEL) / 2.0  # the expression stats.peers.slow_members uses
ALL = None  # the label of a summary over every label of its campaign
BATCH = 2000  # campaigns per summarising query: ~2 million rows sorted, a few seconds


@dataclass(frozen=True)
class RunSummary:
    """One campaign's runs of one quantity (and label, or all labels: label None)."""

    campaign_id: int
    quantity: str
    label: str | None
    n: int
    median: float
    ci95: tuple[float, float] | None  # order statistics (l, n-1-l) at HEADLINE_LEVEL
    ci975: tuple[float, float] | None  # at TEST_LEVEL


def ranks(n: int) -> dict[str, int]:
    """0-based ranks a summary of n sorted values keeps."""
    l95, u95, _ = median_ci_positions(n, HEADLINE_LEVEL)
    l975, u975, _ = median_ci_positions(n, TEST_LEVEL)
    return {"mid_lo": (n - 1) // 2, "mid_hi": n // 2, "l95": l95, "u95": u95, "l975": l975, "u975": u975}


def _assemble(cid: int, quantity: str, label: str | None, n: int, at: dict[int, float]) -> RunSummary:
    r = ranks(n)
    two = n >= 2
    return RunSummary(cid, quantity, label, n, (at[r["mid_lo"]] + at[r["mid_hi"]]) / 2.0,
                      (at[r["l95"]], at[r["u95"]]) if two else None,
                      (at[r["l975"]], at[r["u975"]]) if two else None)


class SummaryMethods:
    """The Store's run summaries (mixed into Store)."""

    # Set or defined by Store (store/db.py), which mixes this class in.
    engine: Any
    t: Any
    _sa: Any

    if TYPE_CHECKING:
        @property
        def dialect(self) -> str: ...

    def _value(self, quantity: str) -> tuple[Any, Any]:
        """(SQL expression of the quantity, condition that it is a usable number)."""
        sa, m = self._sa, self.t["measurements"]
        if quantity == RUNS_PER_S:
            x = sa.literal(1e9, sa.Float) / sa.cast(m.c.wall_ns, sa.Float)
            return x, m.c.wall_ns > 0
        x = m.c.metrics[quantity].as_float()
        # One test, so the JSON is parsed once for it: abs(NULL) is NULL, abs(+-inf) is not below
        # inf, and NaN sorts above inf in PostgreSQL (SQLite has no NaN).
        return x, sa.func.abs(x) < sa.literal(float("inf"), sa.Float)

    def _ok(self) -> Any:
        sa, m = self._sa, self.t["measurements"]
        return sa.and_(m.c.exit_code == 0, m.c.signal.is_(None), m.c.timed_out.is_(False), m.c.failure.is_(None))

    def headline_quantity(self, campaign_id: int) -> str:
        """The first ``*_per_s`` metric of the campaign's first run that exited 0, else runs_per_s."""
        sa, m = self._sa, self.t["measurements"]
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(m.c.metrics).where(m.c.campaign_id == campaign_id)
                               .where(m.c.exit_code == 0).order_by(m.c.id).limit(1)).first()
        names = sorted(k for k in (row.metrics or {}) if k.endswith("_per_s")) if row is not None else []
        return names[0] if names else RUNS_PER_S

    def summarise_runs(self, campaign_ids: Iterable[int], quantity: str, keep: bool = True) -> list[RunSummary]:
        """The summaries of these campaigns (per label and over all labels), computed in batches;
        with ``keep``, stored in place of older ones of the quantity."""
        ids = sorted({int(c) for c in campaign_ids})
        out: list[RunSummary] = []
        for start in range(0, len(ids), BATCH):
            rows = self._compute(ids[start:start + BATCH], quantity)
            if keep:
                self._store_summaries(ids[start:start + BATCH], quantity, rows)
            out += rows
        return out

    def _compute(self, ids: list[int], quantity: str) -> list[RunSummary]:
        if self.dialect == "postgresql":
            return self._compute_pg(ids, quantity)
        return self._compute_windows(ids, quantity)

    def _compute_pg(self, ids: list[int], quantity: str) -> list[RunSummary]:
        """PostgreSQL: each group's values sorted inside array_agg and indexed at the ranks (a
        sort of 1,000 values per campaign in memory, where a window over the batch sorts a
        million rows and spills past work_mem); the ranks of every n come as arrays."""
        from sqlalchemy.dialects import postgresql as pg

        sa, m = self._sa, self.t["measurements"]
        x, _ = self._value(quantity)
        ok = [m.c.campaign_id.in_(ids), self._ok()] + ([m.c.wall_ns > 0] if quantity == RUNS_PER_S else [])
        # OFFSET 0 keeps PostgreSQL from pulling the subquery up, which would parse each run's
        # JSON once for the filter and again for the sort (1.4 s per million rows each).
        vals = sa.select(m.c.campaign_id, m.c.label, x.label("x")).where(*ok).offset(0).subquery()
        usable = sa.func.abs(vals.c.x) < sa.literal(float("inf"), sa.Float)
        with self.engine.connect() as conn:
            # At most this many values in a group: the campaign's rows, before any is left out.
            bound = conn.execute(sa.select(sa.func.max(sa.literal_column("k"))).select_from(
                sa.select(sa.func.count().label("k")).where(m.c.campaign_id.in_(ids))
                .group_by(m.c.campaign_id).subquery())).scalar()
            if not bound:
                return []
            table = [ranks(n) for n in range(1, int(bound) + 1)]
            # Parenthesised, so that PostgreSQL takes the subscript: (CAST($1 AS INTEGER[]))[n].
            arrays = {key: sa.type_coerce(sa.text(f"(CAST(:{key} AS INTEGER[]))").bindparams(
                sa.bindparam(key, [r[key] + 1 for r in table], type_=pg.ARRAY(sa.Integer))), pg.ARRAY(sa.Integer))
                for key in ("l95", "u95", "l975", "u975")}
            out: list[RunSummary] = []
            for group in ((vals.c.campaign_id, vals.c.label), (vals.c.campaign_id,)):
                lab = vals.c.label if len(group) == 2 else sa.null()
                inner = sa.select(vals.c.campaign_id.label("cid"), lab.label("lab"), sa.func.count().label("n"),
                                  sa.func.array_agg(pg.aggregate_order_by(vals.c.x, vals.c.x)).label("a")
                                  ).where(usable).group_by(*group).subquery()
                a, n = inner.c.a, inner.c.n
                picks = [a[(n - 1) // 2 + 1], a[n // 2 + 1]] + [a[arrays[k][n]] for k in ("l95", "u95", "l975",
                                                                                            "u975")]
                rows = conn.execute(sa.select(inner.c.cid, inner.c.lab, n, *picks)).all()
                for cid, label, k, lo_mid, hi_mid, l95, u95, l975, u975 in rows:
                    k = int(k)
                    at = {r: v for r, v in zip(ranks(k).values(), (lo_mid, hi_mid, l95, u95, l975, u975))}
                    out.append(_assemble(int(cid), quantity, label, k, {r: float(v) for r, v in at.items()}))
                if len(group) == 2 and len({r[0] for r in rows}) == len(rows):
                    # One label per campaign: its summary over all labels is the same.
                    out += [RunSummary(s.campaign_id, quantity, ALL, s.n, s.median, s.ci95, s.ci975)
                            for s in out]
                    break
            return out

    def _compute_windows(self, ids: list[int], quantity: str) -> list[RunSummary]:
        """Window functions (SQLite): row_number() over each campaign's sorted values, the rows
        at the ranks kept."""
        sa, m = self._sa, self.t["measurements"]
        x, usable = self._value(quantity)
        where = sa.and_(m.c.campaign_id.in_(ids), self._ok(), usable)
        with self.engine.connect() as conn:
            counts = conn.execute(sa.select(m.c.campaign_id, m.c.label, sa.func.count())
                                  .where(where).group_by(m.c.campaign_id, m.c.label)).all()
        if not counts:
            return []
        n_label = {(int(c), lab): int(k) for c, lab, k in counts}
        n_all: dict[int, int] = {}
        for (c, _), k in n_label.items():
            n_all[c] = n_all.get(c, 0) + k
        sizes = sorted(set(n_label.values()) | set(n_all.values()))
        # The usual campaign has one label: then its summary over all labels is that label's, and
        # one sort per campaign does for both.
        single = len(n_label) == len(n_all)
        cols = [m.c.campaign_id.label("cid"), m.c.label.label("lab"), x.label("x"),
                sa.func.row_number().over(partition_by=m.c.campaign_id, order_by=x).label("ra"),
                sa.func.count().over(partition_by=m.c.campaign_id).label("na")]
        if not single:
            cols += [sa.func.row_number().over(partition_by=(m.c.campaign_id, m.c.label), order_by=x).label("rl"),
                     sa.func.count().over(partition_by=(m.c.campaign_id, m.c.label)).label("nl")]
        inner = sa.select(*cols).where(where).subquery()

        def wanted(rn: Any, n: Any) -> Any:
            # The ranks depend on n through the binomial quantile: a CASE over the batch's sizes.
            conds = [rn == (n - 1) // 2 + 1, rn == n // 2 + 1]
            for key in ("l95", "u95", "l975", "u975"):
                conds.append(rn == sa.case({s: ranks(s)[key] + 1 for s in sizes}, value=n))
            return sa.or_(*conds)

        if single:
            query = sa.select(inner.c.cid, inner.c.lab, inner.c.x, inner.c.ra, inner.c.ra)
            query = query.where(wanted(inner.c.ra, inner.c.na))
        else:
            query = sa.select(inner.c.cid, inner.c.lab, inner.c.x, inner.c.rl, inner.c.ra)
            query = query.where(sa.or_(wanted(inner.c.rl, inner.c.nl), wanted(inner.c.ra, inner.c.na)))
        at_label: dict[tuple[int, str], dict[int, float]] = {}
        at_all: dict[int, dict[int, float]] = {}
        with self.engine.connect() as conn:
            for cid, lab, value, rl, ra in conn.execute(query):
                at_label.setdefault((int(cid), lab), {})[int(rl) - 1] = float(value)
                at_all.setdefault(int(cid), {})[int(ra) - 1] = float(value)
        out = []
        for (cid, lab), n in sorted(n_label.items()):
            out.append(_assemble(cid, quantity, lab, n, at_label[(cid, lab)]))
        for cid, n in sorted(n_all.items()):
            out.append(_assemble(cid, quantity, ALL, n, at_all[cid]))
        return out

    def _store_summaries(self, ids: list[int], quantity: str, rows: list[RunSummary]) -> None:
        t = self.t["run_summaries"]

        def work(conn: Any) -> None:
            conn.execute(t.delete().where(t.c.campaign_id.in_(ids)).where(t.c.quantity == quantity))
            if rows:
                conn.execute(t.insert(), [
                    {"campaign_id": r.campaign_id, "quantity": r.quantity, "label": r.label, "n": r.n,
                     "median": r.median, "ci95_low": r.ci95[0] if r.ci95 else None,
                     "ci95_high": r.ci95[1] if r.ci95 else None, "ci975_low": r.ci975[0] if r.ci975 else None,
                     "ci975_high": r.ci975[1] if r.ci975 else None} for r in rows])

        tx.write(self, work)

    def run_summaries(self, campaign_ids: Iterable[int], quantity: str,
                      labelled: bool | None = None) -> dict[tuple[int, str | None], RunSummary]:
        """(campaign id, label or None for all labels) -> its stored summary of the quantity;
        ``labelled``: only the per-label summaries (True) or only those over all labels (False)."""
        sa, t = self._sa, self.t["run_summaries"]
        ids = sorted({int(c) for c in campaign_ids})
        out: dict[tuple[int, str | None], RunSummary] = {}
        cols = (t.c.campaign_id, t.c.label, t.c.n, t.c.median, t.c.ci95_low, t.c.ci95_high, t.c.ci975_low,
                t.c.ci975_high)
        with self.engine.connect() as conn:
            # One query on an indexed column per 30,000 ids: a parameter list stays far below
            # PostgreSQL's 65,535 and SQLite's 250,000 limits.
            for start in range(0, len(ids), 30000):
                chunk = ids[start:start + 30000]
                q = sa.select(*cols).where(t.c.quantity == quantity).where(t.c.campaign_id.in_(chunk))
                if labelled is not None:
                    q = q.where(t.c.label.is_not(None) if labelled else t.c.label.is_(None))
                for cid, lab, n, med, l95, h95, l975, h975 in conn.execute(q):
                    out[(int(cid), lab)] = RunSummary(
                        int(cid), quantity, lab, int(n), float(med),
                        (float(l95), float(h95)) if l95 is not None else None,
                        (float(l975), float(h975)) if l975 is not None else None)
        return out
