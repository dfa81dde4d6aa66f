"""Per host of a fleet: the study's headline, and the sample its slow-node test compares.

The compared quantity is higher-is-better throughput: a ``*_per_s`` metric the workload prints
(events/s), else runs per second (1 / wall time). For ``instances`` it is the aggregate
throughput at the host's optimum copy count, one value per repetition; for ``run`` and ``cores``
every successful run of the first command (``run``) or of every CPU (``cores``) is one value.

Two ways to a host's figures: ``host_data`` reads every run in one query (a fleet of a few
thousand hosts: the slow-node test ranks them all), ``host_summaries`` reads the per-campaign
summaries the store computes (store/summaries.py: count, median, the order statistics of its
intervals), so that 100,000 hosts cost 100,000 rows; ``campaign_runs`` then reads back the few
hosts a verdict needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from perflab.errors import PerflabError
from perflab.stats import median
from perflab.stats.peers import median_ci_positions, median_ci
from perflab.stats.peer_medians import MemberSummary
from perflab.store.summaries import ALL, RUNS_PER_S, RunSummary


@dataclass
class HostData:
    """What the report needs of one host's campaign."""

    values: list[float] = field(default_factory=list)  # higher is better
    headline: dict[str, Any] = field(default_factory=dict)
    summary: RunSummary | MemberSummary | None = None  # host_summaries' (values then stay empty); visits pooled


def _ci(xs: list[float]) -> dict | None:
    """The median's order-statistic interval (cheap for thousands of hosts), with its real level."""
    if len(xs) < 2:
        return None
    lo, hi, level = median_ci(xs, 0.95)
    return {"low": lo, "high": hi, "level": round(level, 4)}


def _instances(summary: dict) -> HostData:
    scans = summary.get("scans") or []
    if not scans:
        return HostData(headline={"note": "no scan in the campaign's summary"})
    best = max(scans, key=lambda s: s.get("optimum_throughput") or 0.0)
    point: dict[str, Any] = next((p for p in best.get("points", []) if p.get("n") == best.get("optimum_n")), {})
    samples = [float(x) for x in point.get("samples") or [] if x is not None]
    return HostData(samples, {
        "quantity": f"throughput ({summary.get('unit', '')}) at the optimum".replace(" ()", ""),
        "optimum_n": best.get("optimum_n"), "policy": best.get("policy"),
        "throughput": best.get("optimum_throughput"), "ci": _ci(samples), "n": len(samples),
    })


def _score(summary: dict) -> HostData:
    """A score campaign's host figure: its score, and one score per repetition (the repetition's
    workload ratios through the suite's weighted geometric mean) as the sample its peers test."""
    import math

    wls = summary.get("workloads") or []
    reps = min((len(w.get("rep_ratios") or []) for w in wls), default=0)
    total = sum(float(w.get("weight", 1.0)) for w in wls)
    scaling = float(summary.get("scaling") or 1.0)
    samples = [scaling * math.exp(sum(float(w.get("weight", 1.0)) * math.log(w["rep_ratios"][r]) for w in wls)
                                  / total) for r in range(reps)] if wls and total > 0 else []
    ci = summary.get("score_ci")
    level = summary.get("level")
    return HostData(samples, {
        "quantity": f"score ({summary.get('suite', 'suite')})", "median": summary.get("score"),
        "ci": {"low": ci[0], "high": ci[1], "level": level} if ci else None, "n": len(samples),
    })


def first_run(store, campaign_ids: list[int]) -> tuple[str | None, str | None]:
    """(throughput metric the runs print, a *_per_s name or None; label of the first command)."""
    import sqlalchemy as sa

    m = store.t["measurements"]
    with store.engine.connect() as conn:
        row = conn.execute(sa.select(m.c.metrics, m.c.label).where(m.c.campaign_id == campaign_ids[0])
                           .where(m.c.exit_code == 0).order_by(m.c.id).limit(1)).first()
    if row is None:
        return None, None
    return next((k for k in sorted(row.metrics or {}) if k.endswith("_per_s")), None), row.label


def _runs(store, campaigns: list, metric: str | None, labels: dict[int, str] | None) -> dict[int, list[float]]:
    """campaign id -> values of its successful runs (of its label if given), in one query."""
    import numpy as np
    import sqlalchemy as sa

    m = store.t["measurements"]
    value = m.c.metrics[metric].as_float() if metric else m.c.wall_ns
    ok = sa.and_(m.c.exit_code == 0, m.c.signal.is_(None), m.c.timed_out.is_(False), m.c.failure.is_(None))
    query = sa.select(m.c.campaign_id, value).where(m.c.campaign_id.in_([c.id for c in campaigns])).where(ok)
    distinct = set(labels.values()) if labels else set()
    if len(distinct) > 1:
        # Per-host labels (a command naming its node-local bundle directory): fetch them too.
        query = sa.select(m.c.campaign_id, value, m.c.label).where(m.c.campaign_id.in_(list(labels)))  # type: ignore[arg-type]  # not None where distinct holds two
        query = query.where(ok).where(m.c.label.in_(sorted(distinct)))
    elif distinct:
        query = query.where(m.c.label == distinct.pop())
    query = query.where(value.is_not(None))
    if store.dialect == "postgresql":
        rows = _fetch_raw(store, query)
    else:
        with store.engine.connect() as conn:
            rows = conn.execute(query).all()
    if labels and rows and len(rows[0]) == 3:
        rows = [r for r in rows if labels.get(r[0]) == r[2]]
    if not rows:
        return {}
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    vals = np.fromiter((r[1] for r in rows), dtype=float, count=len(rows))
    del rows
    if not metric:
        # Wall time becomes runs per second, so that every quantity is higher-is-better.
        with np.errstate(divide="ignore"):
            vals = 1e9 / vals
    order = np.argsort(ids, kind="stable")
    ids, vals = ids[order], vals[order]
    keys, starts = np.unique(ids, return_index=True)
    bounds = list(starts[1:]) + [ids.size]
    return {int(k): vals[a:b][np.isfinite(vals[a:b])].tolist() for k, a, b in zip(keys, starts, bounds)}


def _fetch_raw(store, query) -> list[tuple]:
    """All rows through psycopg's cursor: SQLAlchemy's per-row objects cost more than the query
    (1.8 million rows: seconds instead of a minute). No bind processors apply to this query's
    PostgreSQL parameters (ids, a JSON key as text), so the compiled parameters go as they are.
    """
    compiled = query.compile(dialect=store.engine.dialect, compile_kwargs={"render_postcompile": True})
    raw = store.engine.raw_connection()
    try:
        cur = raw.cursor()
        cur.execute(str(compiled), compiled.params)
        rows = cur.fetchall()
        cur.close()
        return rows
    finally:
        raw.close()


def _selection(store, campaigns: list) -> tuple[str | None, dict[int, str] | None]:
    """(the throughput metric or None for 1 / wall time, campaign id -> label compared or None: all)."""
    metric, label = first_run(store, [c.id for c in campaigns])
    labels: dict[int, str] | None = None
    if campaigns[0].study == "run":
        # Compare each host's first command (runs interleave, so the first stored run may be of
        # another); its name may differ per host, e.g. a path into the node's bundle directory.
        labels = {}
        for c in campaigns:
            benches = (c.summary or {}).get("benchmarks") or []
            labels[c.id] = benches[0].get("command", label) if benches else label  # type: ignore[assignment]  # a run campaign has a first run
    return metric, labels


def _headline(c, quantity: str, n: int, med: float | None, ci: dict | None) -> dict[str, Any]:
    head: dict[str, Any] = {"quantity": quantity, "median": med, "ci": ci, "n": n}
    if c.study == "run":
        benches = (c.summary or {}).get("benchmarks") or []
        if benches:
            head["command"] = benches[0].get("command")
    if c.study == "cores":
        slow = (c.summary or {}).get("slow") or []
        head["slow_cores"] = [{k: s.get(k) for k in ("core", "cpus", "ratio", "p_adjusted", "slower_rounds",
                                                     "rounds")} for s in slow]
    return head


def host_data(store, campaigns: list) -> dict[int, HostData]:
    """campaign id -> HostData for a fleet's done campaigns (all of one study)."""
    if not campaigns:
        return {}
    if campaigns[0].study == "instances":
        return {c.id: _instances(c.summary or {}) for c in campaigns}
    if campaigns[0].study == "score":
        return {c.id: _score(c.summary or {}) for c in campaigns}
    metric, labels = _selection(store, campaigns)
    runs = _runs(store, campaigns, metric, labels)
    quantity = metric or "runs_per_s (1 / wall time)"
    out = {}
    for c in campaigns:
        values = runs.get(c.id, [])
        out[c.id] = HostData(values, _headline(c, quantity, len(values), median(values) if values else None,
                                               _ci(values)))
    return out


def host_summaries(store, campaigns: list) -> tuple[dict[int, HostData], str | None, dict[int, str] | None]:
    """(campaign id -> HostData with the store's summary, metric, labels) for a fleet's done
    campaigns of ``run`` or ``cores``; summaries missing from the store are computed there and kept."""
    metric, labels = _selection(store, campaigns)
    quantity = metric or RUNS_PER_S
    ids = [c.id for c in campaigns]
    have = store.run_summaries(ids, quantity, labelled=labels is not None)
    key = (lambda cid: (cid, labels[cid])) if labels else (lambda cid: (cid, ALL))
    missing = [cid for cid in ids if key(cid) not in have]
    if missing:
        try:
            made = store.summarise_runs(missing, quantity)
        except (PerflabError, store._sa.exc.SQLAlchemyError):
            made = store.summarise_runs(missing, quantity, keep=False)  # a store we may only read
        have.update({(s.campaign_id, s.label): s for s in made})
    shown = metric or "runs_per_s (1 / wall time)"
    out = {}
    for c in campaigns:
        s = have.get(key(c.id))
        ci = None
        if s is not None and s.ci95 is not None:
            ci = {"low": s.ci95[0], "high": s.ci95[1], "level": round(median_ci_positions(s.n, 0.95)[2], 4)}
        out[c.id] = HostData([], _headline(c, shown, s.n if s else 0, s.median if s else None, ci), s)
    return out, metric, labels


def campaign_runs(store, campaign, metric: str | None, labels: dict[int, str] | None) -> list[float]:
    """One campaign's values, as host_data reads them for the whole fleet."""
    mine = {campaign.id: labels[campaign.id]} if labels else None
    return _runs(store, [campaign], metric, mine).get(campaign.id, [])


def platform_of(host: dict | None, features: str = "") -> dict[str, Any]:
    """The platform a host belongs to: its Slurm node features, CPU model, sockets, cores,
    memory, kernel (``features``: the node's, comma-separated, as the fleet task recorded)."""
    meta = (host or {}).get("metadata") or {}
    topo = (host or {}).get("topology") or {}
    kernel = meta.get("kernel")
    if isinstance(kernel, dict):
        kernel = kernel.get("release")
    mem = meta.get("mem_total_bytes")
    return {
        "cpu_model": meta.get("cpu_model") or "unknown CPU",
        "sockets": len(topo.get("sockets") or ()) or None,
        "cores": len(topo.get("cores") or ()) or meta.get("logical_cpus_in_cpuinfo"),
        # Rounded: two nodes of one platform differ by a few MiB of reserved memory.
        "memory_gib": round(mem / 2**30) if isinstance(mem, (int, float)) else None,
        "kernel": kernel,
        "features": ",".join(sorted(f for f in features.split(",") if f)) or None,
    }


def platform_key(p: dict[str, Any]) -> str:
    sockets = f"{p['sockets']}S/" if p.get("sockets") else ""
    cores = f"{p['cores']}C" if p.get("cores") else "?C"
    mem = f", {p['memory_gib']} GiB" if p.get("memory_gib") is not None else ""
    kernel = f", kernel {p['kernel']}" if p.get("kernel") else ""
    features = f"[{p['features']}] " if p.get("features") else ""
    return f"{features}{p['cpu_model']}, {sockets}{cores}{mem}{kernel}"
