"""`perflab profile --instrument callgrind`: counted profiles, their top functions, and the diff.

Callgrind counts every instruction (and with --cache-sim the simulated cache misses) per
function, exclusive (its own code) and inclusive (with what it called). A recording is one
stored run whose health holds its counts (measure/callgrind.counts_to_dict), so analysis and
`profile diff` need neither Valgrind nor the callgrind.out files. Names are folded as perf's are
(parse.fold_symbol), so clones of a rebuilt binary match.

Run to run: for each event, the spread of the recordings' totals, (max - min) / median; 0 says
every recording counted the same (a whole run of a deterministic program). A window's edges move
with the time vgdb takes to switch instrumentation (measure/callgrind.py), so windows have a
spread. The diff ranks functions by the change of their mean exclusive Ir and tests B/A of
each function's exclusive counts with judge.counted_test: Welch's t on the log counts, exact
where every recording of each side counted the same (p 0, or 1 when equal; the interval is the
ratio itself). Tested are the functions present in every recording and holding >= 0.1 % of a
side's Ir (at most 50, chosen by share, not by change), Holm over them; a function is *changed*
when its Holm p < alpha and its interval lies beyond 1 +- min_effect (default 0: counts are
exact). A function on one side only is named appeared or vanished, not tested (no log of 0).
2 recordings a side test; with 1 the table is descriptive. checks/profile_counts.py shows
the false alarms and the detection under the jitter measured for whole runs and for windows.
"""

from __future__ import annotations

import math
import shutil
import statistics
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generator, Sequence

from perflab.measure.interface import ConcurrentResult, RealClock
from perflab.measure.callgrind import CallgrindRequest, Counts, counts_from_dict, counts_to_dict, record
from perflab.measure.metrics import extract
from perflab.model import RunResult, RunSpec
from perflab.platform.cache_model import parse as parse_model
from perflab.stats.comparison import holm
from perflab.stats.judge import counted_test
from perflab.studies.base import decode
from perflab.studies.profile.parse import fold_symbol
from perflab.studies.profile.stacks import cap, flame, fold_contexts, merge_stacks
from perflab.studies.profile.window import window_figures
from perflab.studies.session import Session

if TYPE_CHECKING:  # the study module imports this one
    from perflab.measure.journal import Journal
    from perflab.studies.profile.study import ProfileConfig

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
    if n < 2:
        return f"not measured ({n} recording)"
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


class OneRecordingAtATime(RealClock):
    """The Executor a profile's inner Session runs: ``run`` records one window (a subclass says
    how); a recording is never batched, captured or run beside another."""

    live = True  # records real processes

    def can_batch(self, spec: RunSpec) -> bool:
        return False

    def run_batch(self, spec: RunSpec, count: int, journal: Journal | None = None,
                  key: tuple[int, str, dict, int] | None = None) -> Generator[list[RunResult], None, None]:
        raise ValueError("a profile records one window at a time: can_batch is always False")

    def capture(self, spec: RunSpec) -> tuple[RunResult, str]:
        raise ValueError("a profile's recording keeps its output in its own log: use run")

    def run_concurrent(self, specs: Sequence[RunSpec], together: bool = True) -> ConcurrentResult:
        raise ValueError("a profile records one process tree at a time")


class CallgrindRecordings(OneRecordingAtATime):
    """Executor-style adapter: each run is one callgrind recording, its counts kept in health."""

    def __init__(self, config: ProfileConfig, out: Path, root: str, model: Any) -> None:
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
                    "whole": counts_to_dict(whole), "stacks": cap(fold_contexts(counts.contexts))})


def recorded_counts(runs: Sequence[RunResult]) -> list[Counts]:
    return [counts_from_dict(r.health["counts"]) for r in runs if "counts" in r.health]


def execute_counted(config: ProfileConfig, session: Session, specs: list[RunSpec]) -> list[RunResult]:
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


def analyse_counted(config: ProfileConfig, runs: Sequence[RunResult], res: Any) -> Any:
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
    per = [r.health["stacks"] for r in ok if "stacks" in r.health]
    if per and len(per) == len(ok):  # the call tree by exclusive instructions per call path
        res.stacks, res.flame = merge_stacks(per), flame(per)
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


MIN_COUNT_RECORDINGS = 2  # per side: Welch's t needs a variance on each side (0 is one: exact)
MIN_COUNTED_SHARE = 0.001  # of a side's total Ir: below it, printf's digits (a few hundred Ir
# that move with the printed timings: hack_digit 870 -> 860 in minihlt) would be exact changes
MAX_COUNTED = 50  # functions tested, chosen by their largest share on either side (not by change)

# Why a row was not tested (CountDiffRow.status); "tested" otherwise.
# Appeared / vanished: in every recording of one side and in none of the other.
APPEARED, VANISHED, BELOW, PARTIAL, NO_TEST = "appeared", "vanished", "below", "partial", "no test"


@dataclass
class CountDiffRow:
    """One function's mean exclusive Ir on each side, the change, each side's range, and the
    test of B/A on its exclusive counts (judge.counted_test) where it was tested."""

    symbol: str
    obj: str
    a: float
    b: float
    a_range: tuple[float, float]
    b_range: tuple[float, float]
    incl_a: float
    incl_b: float
    status: str = NO_TEST  # "tested", or why not: APPEARED, VANISHED, BELOW, PARTIAL, NO_TEST
    ratio: float | None = None  # B/A of the means of the logs (exact where both sides constant)
    low: float | None = None
    high: float | None = None
    level: float | None = None  # the interval's level: 1.0 where exact
    p: float | None = None
    p_holm: float | None = None
    changed: bool = False  # p_holm < alpha and the interval beyond 1 +- min_effect

    @property
    def change(self) -> float:
        return self.b - self.a

    @property
    def change_pct(self) -> float | None:
        return self.change / self.a if self.a else None

    @property
    def exact(self) -> bool:
        return self.level == 1.0

    def test_text(self) -> str:
        """What the row's call rests on, in words."""
        if self.status != "tested" or self.ratio is None:
            return {APPEARED: "present in B only", VANISHED: "present in A only",
                    BELOW: f"below {MIN_COUNTED_SHARE:.1%} of Ir on both sides: not tested",
                    PARTIAL: "absent from some recordings: not tested"}.get(self.status, "not tested")
        if self.exact:
            return f"B/A {self.ratio:.4f} exact (every recording of each side counted the same), p {self.p:.2g}"
        return (f"B/A {self.ratio:.4f} [{self.low:.4f}, {self.high:.4f}] {self.level:.0%} CI, "
                f"Welch's t on log counts, Holm p {self.p_holm:.2g}")

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(change=self.change, change_pct=self.change_pct)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CountDiffRow":
        return decode(cls, d)


def diff_counts(a: Sequence[Counts], b: Sequence[Counts], alpha: float,
                min_effect: float = 0.0) -> list[CountDiffRow]:
    """Every function's exclusive Ir on both sides, largest absolute change first; B/A tested
    by counted_test (Welch's t on log counts, exact where constant) for the functions present in
    every recording and holding >= MIN_COUNTED_SHARE of a side's Ir, Holm over those."""
    pa, pb = [folded(c) for c in a], [folded(c) for c in b]
    tot_a = statistics.fmean(c.totals[0] for c in a) or 1.0
    tot_b = statistics.fmean(c.totals[0] for c in b) or 1.0
    testable = min(len(a), len(b)) >= MIN_COUNT_RECORDINGS
    rows, values = [], {}
    for sym in {k for p in [*pa, *pb] for k in p}:
        # A function whose exclusive count is 0 ran only through its callees: absent here.
        va = [p[sym][1][0] if sym in p else 0.0 for p in pa]
        vb = [p[sym][1][0] if sym in p else 0.0 for p in pb]
        ia = [p[sym][2][0] if sym in p else 0.0 for p in pa]
        ib = [p[sym][2][0] if sym in p else 0.0 for p in pb]
        obj = next(p[sym][0] for p in [*pb, *pa] if sym in p)
        row = CountDiffRow(sym, obj, statistics.fmean(va), statistics.fmean(vb), (min(va), max(va)),
                           (min(vb), max(vb)), statistics.fmean(ia), statistics.fmean(ib))
        if max(row.a / tot_a, row.b / tot_b) < MIN_COUNTED_SHARE:
            row.status = BELOW
        elif not any(va) and all(vb) or not any(vb) and all(va):
            row.status = APPEARED if any(vb) else VANISHED
        elif not all(va) or not all(vb):
            row.status = PARTIAL
        elif testable:
            values[sym] = (va, vb)
        rows.append(row)
    by_sym = {r.symbol: r for r in rows}
    chosen = sorted(values, key=lambda s: (-max(by_sym[s].a / tot_a, by_sym[s].b / tot_b), s))
    for sym in chosen[MAX_COUNTED:]:
        by_sym[sym].status = BELOW
    chosen = chosen[:MAX_COUNTED]
    tests = [counted_test(*values[s], alpha) for s in chosen]
    for sym, (p, lo, hi, level, _), adj in zip(chosen, tests, holm([t[0] for t in tests])):
        r = by_sym[sym]
        r.status, r.p, r.p_holm, r.low, r.high, r.level = "tested", p, adj, lo, hi, level
        r.ratio = math.sqrt(lo * hi)  # the interval is symmetric about it on the log scale
        r.changed = adj < alpha and (lo > 1 + min_effect or hi < 1 / (1 + min_effect))
    rows.sort(key=lambda r: (-abs(r.change), r.symbol))
    return rows
