"""`perflab profile --instrument callgrind`: counted profiles, their top functions, and the diff.

Callgrind counts every instruction (and with --cache-sim the simulated cache misses) per
function, exclusive (its own code) and inclusive (with what it called). A recording is one
stored run whose health holds its counts (measure/callgrind.counts_to_dict), so analysis and
`profile diff` need neither Valgrind nor the callgrind.out files. Names are folded as perf's are
(profile_parse.fold_symbol), so clones of a rebuilt binary match.

Run to run: for each event, the spread of the recordings' totals, (max - min) / median; 0 says
every recording counted the same (a whole run of a deterministic program). A window's edges move
with the time vgdb takes to switch instrumentation (measure/callgrind.py), so windows have a
spread. The diff ranks functions by the change of their mean exclusive Ir, and calls a change
*separated* when every recording of one side lies above every recording of the other: with
counts whose spread is 0 that is exact, otherwise it is the ranges' own verdict, not a test.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

from perflab.measure.callgrind import CallgrindRequest, Counts, counts_from_dict, counts_to_dict, record
from perflab.measure.metrics import extract
from perflab.model import RunResult, RunSpec
from perflab.platform.cache_model import parse as parse_model
from perflab.studies.profile_parse import fold_symbol
from perflab.studies.profile_window import window_figures

NAME_CALLGRIND = "callgrind"
TOP = 25  # functions shown by exclusive Ir


def folded(c: Counts) -> dict[str, tuple[str, list[float], list[float]]]:
    """symbol (clone suffixes folded) -> (object, exclusive, inclusive), per event."""
    out: dict[str, tuple[str, list[float], list[float]]] = {}
    n = len(c.events)
    for f in c.functions.values():
        key = fold_symbol(f.name)
        obj, s, i = out.get(key, (f.obj, [0.0] * n, [0.0] * n))
        out[key] = (obj, [a + b for a, b in zip(s, f.self_ + [0.0] * n)],
                    [a + b for a, b in zip(i, f.incl + [0.0] * n)])
    return out


def spread(values: Sequence[float]) -> float:
    """(max - min) / median of the recordings' values; 0 when they are all equal."""
    med = statistics.median(values)
    return (max(values) - min(values)) / med if med else 0.0


def spread_text(s: float, n: int) -> str:
    return f"0 (all {n} recordings equal)" if s == 0 else f"{100 * s:.2g} % over {n} recordings"


@dataclass
class CountRow:
    """One function's mean counts per recording: exclusive and inclusive, per event."""

    symbol: str
    obj: str
    self_: list[float]
    incl: list[float]
    share: float  # of the recording's first event (Ir), exclusive
    spread: float  # of its exclusive Ir over the recordings

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def top_counts(counts: Sequence[Counts], threshold: float, limit: int = TOP) -> list[CountRow]:
    """Functions holding >= threshold of Ir exclusive, highest first, means over recordings."""
    per = [folded(c) for c in counts]
    n_ev = len(counts[0].events)
    total = statistics.fmean(c.totals[0] for c in counts) if n_ev else 0.0
    rows = []
    for sym in sorted({k for p in per for k in p}):
        got = [p.get(sym) for p in per]
        selfs = [[g[1][e] if g else 0.0 for g in got] for e in range(n_ev)]
        incls = [[g[2][e] if g else 0.0 for g in got] for e in range(n_ev)]
        obj = next(g[0] for g in got if g)
        mean_self = [statistics.fmean(v) for v in selfs]
        share = mean_self[0] / total if total else 0.0
        if share >= threshold:
            rows.append(CountRow(sym, obj, mean_self, [statistics.fmean(v) for v in incls], share,
                                 spread(selfs[0])))
    rows.sort(key=lambda r: (-r.self_[0], r.symbol))
    return rows[:limit]


class CallgrindRecordings:
    """Executor-style adapter: each run is one callgrind recording, its counts kept in health."""

    def __init__(self, config: Any, out: Path, root: str, model: Any) -> None:
        self.config, self.out, self.root, self.model = config, out, root, model

    def run(self, spec: RunSpec) -> RunResult:
        c, k = self.config, int(spec.params["recording"])
        req = CallgrindRequest(outdir=str(self.out / f"callgrind-{k}"), window=c.window,
                               output_log=str(self.out / f"output-{k}.log"), use_pty=c.use_pty,
                               timeout=c.timeout, cache_model=self.model)
        rec, counts, whole = record(spec, req, self.root)
        metrics: dict[str, float] = dict(zip(counts.events, counts.totals))
        if spec.metrics:
            metrics.update(extract(spec.metrics, "\n".join(rec.output_tail), ""))
        if rec.enable_latency_ns is not None:
            metrics["enable_latency_us"] = rec.enable_latency_ns / 1e3
        rc = rec.exit_code
        exit_code, signal = (rc, None) if rc is None or rc >= 0 else (None, -rc)
        return RunResult(
            wall_ns=rec.end_ns - rec.launch_ns, user_s=0.0, sys_s=0.0, maxrss_kb=0, minflt=0,
            majflt=0, nvcsw=0, nivcsw=0, exit_code=exit_code, signal=signal, start_ns=rec.launch_ns,
            timed_out=rec.timed_out, end_ns=rec.end_ns, metrics=metrics,
            stdout_tail="\n".join(rec.output_tail[-10:]),
            health={"event": "callgrind", "instrument": "callgrind",
                    "cache_model": self.model.text() if self.model else "",
                    "window": window_figures(rec, None, 0), "counts": counts_to_dict(counts),
                    "whole": counts_to_dict(whole)})


def recorded_counts(runs: Sequence[RunResult]) -> list[Counts]:
    return [counts_from_dict(r.health["counts"]) for r in runs if "counts" in r.health]


def execute_counted(config: Any, session: Any, specs: list[RunSpec]) -> list[RunResult]:
    """Each recording under callgrind, stored one by one, its callgrind.out files an artifact."""
    out = Path(config.out_dir) / str(session.campaign_id)
    out.mkdir(parents=True, exist_ok=True)
    # /tmp itself: the program's link must have the same path length on every machine
    root = tempfile.mkdtemp(prefix="perflab-callgrind-", dir="/tmp")
    model = parse_model(config.cache_model) if config.cache_model else None
    runs = type(session)(CallgrindRecordings(config, out, root, model), session.store,
                         session.campaign_id, session.progress, resumed=session.resumed)
    results = []
    try:
        for k, spec in enumerate(specs):
            before = runs.executed
            r = runs.run(spec, rep=k)
            results.append(r)
            if runs.executed > before:
                session.store.add_artifact(session.campaign_id, "callgrind.out", str(out / f"callgrind-{k}"),
                                           meta={"rep": k})
            done = " was stored: not recorded again" if runs.executed == before else " stored"
            ir = r.metrics.get("Ir")
            session.say(f"recording {k + 1}/{config.repeat}{done}"
                        + (f" ({ir:,.0f} instructions)" if r.ok and ir is not None else f" (failed: {r.failure})"))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    session.executed += runs.executed
    session.replayed += runs.replayed
    return results


def analyse_counted(config: Any, runs: Sequence[RunResult], res: Any) -> Any:
    """Top functions by exclusive Ir (means over recordings), totals and their spread."""
    ok = [r for r in runs if r.ok and r.health.get("window", {}).get("opened")]
    counts = recorded_counts(ok)
    res.instrument, res.event, res.opened = NAME_CALLGRIND, NAME_CALLGRIND, True
    res.event_reason = "instrument callgrind: instructions counted per function by Valgrind"
    res.cache_model = ok[0].health.get("cache_model", "")
    res.count_events = list(counts[0].events)
    res.count_totals = [sum(c.totals[e] for c in counts) / len(counts) for e in range(len(res.count_events))]
    res.count_spread = [spread([c.totals[e] for c in counts]) for e in range(len(res.count_events))]
    res.count_top = top_counts(counts, config.threshold)
    scope = ("the whole run" if config.window.whole_run else f"{len(ok)} window(s) {config.window.describe()}")
    msg = (f"{res.count_totals[0]:,.0f} instructions per recording (callgrind) in {scope}; "
           f"run-to-run spread {spread_text(res.count_spread[0], len(ok))}")
    if res.count_top:
        t = res.count_top[0]
        msg += f"; top (exclusive): {t.symbol} {t.share:.1%}"
    if res.failed:
        msg += f"; {len(res.failed)} of {len(runs)} recording(s) failed and are left out"
    res.message = msg
    return res


@dataclass
class CountDiffRow:
    """One function's mean exclusive Ir on each side, the change, and each side's range."""

    symbol: str
    obj: str
    a: float
    b: float
    a_range: tuple[float, float]
    b_range: tuple[float, float]
    incl_a: float
    incl_b: float

    @property
    def change(self) -> float:
        return self.b - self.a

    @property
    def change_pct(self) -> float | None:
        return self.change / self.a if self.a else None

    @property
    def separated(self) -> bool:
        """Every recording of one side above every recording of the other."""
        return self.b_range[0] > self.a_range[1] or self.b_range[1] < self.a_range[0]

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(change=self.change, change_pct=self.change_pct, separated=self.separated)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CountDiffRow":
        return cls(d["symbol"], d["obj"], d["a"], d["b"], tuple(d["a_range"]), tuple(d["b_range"]),  # type: ignore[arg-type]
                   d["incl_a"], d["incl_b"])


def diff_counts(a: Sequence[Counts], b: Sequence[Counts]) -> list[CountDiffRow]:
    """Every function's exclusive Ir on both sides, largest absolute change first."""
    pa, pb = [folded(c) for c in a], [folded(c) for c in b]
    rows = []
    for sym in {k for p in [*pa, *pb] for k in p}:
        va = [p[sym][1][0] if sym in p else 0.0 for p in pa]
        vb = [p[sym][1][0] if sym in p else 0.0 for p in pb]
        ia = [p[sym][2][0] if sym in p else 0.0 for p in pa]
        ib = [p[sym][2][0] if sym in p else 0.0 for p in pb]
        obj = next(p[sym][0] for p in [*pb, *pa] if sym in p)
        rows.append(CountDiffRow(sym, obj, statistics.fmean(va), statistics.fmean(vb),
                                 (min(va), max(va)), (min(vb), max(vb)),
                                 statistics.fmean(ia), statistics.fmean(ib)))
    rows.sort(key=lambda r: (-abs(r.change), r.symbol))
    return rows
