"""One study's execution: every run is stored in the study's campaign as it completes, and a
resumed campaign gets its stored runs back instead of running them again.

The resume key of a run is its design key: (label, canonical params, rep). A study makes that
key unique per run (a round number or a copy index in the params). On resume the study runs from
the start with its stored config and seed: each run whose key is stored is answered from the
store, so adaptive decisions (shuffled orders, precision stops) come out the same, and only runs
that never finished are executed. Warm-up runs are not stored and are skipped on resume.
"""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from perflab.measure import journal as run_journal
from perflab.measure.energy import EnergyMeter
from perflab.measure.executor import ConcurrentResult, Executor
from perflab.measure.journal import Journal
from perflab.model import RunResult, RunSpec
from perflab.store import canonical_params

if TYPE_CHECKING:
    from perflab.store import Store

Key = tuple[str, str, int]


def _quiet(message: str) -> None:
    """The default progress callback: say nothing."""


def run_key(spec: RunSpec, rep: int) -> Key:
    return (spec.label, canonical_params(dict(spec.params or {})), int(rep))


@dataclass
class Session:
    """Executor + store + campaign: how a study runs things (the mock executor plugs in here)."""

    executor: Executor
    store: Store
    campaign_id: int
    progress: Callable[[str], None] = _quiet
    resumed: bool = False
    energy: EnergyMeter | None = None  # read around every run when a source is available
    executed: int = 0
    replayed: int = 0
    _stored: dict[Key, deque[RunResult]] = field(default_factory=dict, repr=False)
    _journal: Journal | None | bool = field(default=False, repr=False)  # False: not opened yet

    def __post_init__(self) -> None:
        if self.resumed:
            recover_journals(self.store)
            stored: dict[Key, deque[RunResult]] = defaultdict(deque)
            series = self.store.series(self.campaign_id)  # a replayed run keeps its per-event series
            for m in self.store.measurements(self.campaign_id):
                m.result.series = series.get(m.id, b"")
                stored[(m.label, canonical_params(m.params), int(m.rep))].append(m.result)
            self._stored = dict(stored)

    def _replay(self, key: Key) -> RunResult | None:
        queue = self._stored.get(key) if self._stored else None
        if queue:
            self.replayed += 1
            return queue.popleft()
        return None

    def run(self, spec: RunSpec, rep: int = 0) -> RunResult:
        """Run one spec (or replay it on resume); stored before this returns."""
        result = self._replay(run_key(spec, rep)) if self._stored else None
        if result is not None:
            return result
        if self.energy is not None:
            self.energy.start()
            result = self.executor.run(spec)
            result.energy = self.energy.stop()
        else:
            result = self.executor.run(spec)
        self.executed += 1
        self.store.add_measurement(self.campaign_id, result, dict(spec.params or {}), rep=rep,
                                   label=spec.label)
        return result

    def run_many(self, spec: RunSpec, first_rep: int, count: int) -> Iterator[RunResult]:
        """Runs ``first_rep .. first_rep+count-1`` of ``spec``, each stored as it completes (or
        replayed). Where the executor and the store allow, they go back to back in the spawn
        server, which journals each run before it starts the next, while this stores the one
        before: the store is off the runs' critical path and a kill still loses at most the run
        in flight (measure/journal.py). A failed run ends a batch; the caller decides."""
        rep, end = first_rep, first_rep + count
        while rep < end:
            journal = self._batch_journal(spec)
            if journal is None or self.stored(spec, rep):
                yield self.run(spec, rep)
                rep += 1
                continue
            stop = rep + 1
            while stop < end and not self.stored(spec, stop):
                stop += 1
            params = dict(spec.params or {})
            batch = self.executor.run_batch(
                spec, stop - rep, journal, (self.campaign_id, spec.label, params, rep))
            settled = False  # every run the server journalled is in the store
            try:
                for group in batch:
                    # one transaction per group: the journal already holds each run
                    self.store.add_measurements(self.campaign_id, [
                        (result, params, rep + k, spec.label) for k, result in enumerate(group)])
                    self.executed += len(group)
                    settled = not group[-1].ok  # a failed run ends the batch: none after it
                    for result in group:
                        rep += 1
                        yield result
                settled = True
            finally:
                batch.close()
                if settled:
                    journal.clear()

    def _batch_journal(self, spec: RunSpec) -> Journal | None:
        """The journal for back-to-back runs of ``spec``, or None where they go one by one."""
        if self.energy is not None or not self.executor.can_batch(spec):
            return None  # energy is read around each run; the mock runs one at a time
        if self._journal is False:
            self._journal = Journal.beside(getattr(self.store, "path", None))
        return self._journal  # type: ignore[return-value]  # False only before the first call, replaced above

    def close(self) -> None:
        """The journal goes when it is empty (all stored); a batch cut short leaves it for
        ``recover_journals`` (the resume of the campaign)."""
        if isinstance(self._journal, Journal):
            self._journal.close()
        self._journal = False

    def run_concurrent(self, specs: Sequence[RunSpec], rep: int = 0, together: bool = True) -> ConcurrentResult:
        """Start copies together; each copy's run is stored. Replayed whole, or run whole again."""
        keys = [run_key(s, rep) for s in specs]
        if len(set(keys)) != len(keys):
            raise ValueError("concurrent copies need distinct params (e.g. a copy index)")
        if self._stored and all(self._stored.get(k) for k in keys):
            # Every key holds a stored run (checked above): no replay comes back None.
            results = [r for r in (self._replay(k) for k in keys) if r is not None]
            starts = [r.start_ns for r in results]
            return ConcurrentResult(results, max(starts) - min(starts), min(starts), starts, together)
        if self.energy is not None:
            # One reading covers the whole batch: it is stored with the first copy's run.
            self.energy.start()
            out = self.executor.run_concurrent(specs, together=together)
            if out.results:
                out.results[0].energy = self.energy.stop()
        else:
            out = self.executor.run_concurrent(specs, together=together)
        self.executed += len(specs)
        for result in out.results:
            # Incidental, so not a design key (it would break resume and compare's matching).
            result.health.setdefault("start_spread_ns", out.start_spread_ns)
        self.store.add_measurements(self.campaign_id, [(r, dict(s.params or {}), rep, s.label)
                                                       for s, r in zip(specs, out.results)])
        return out

    def capture(self, spec: RunSpec, rep: int = 0,
                parse: Callable[[str], dict[str, float]] | None = None) -> RunResult:
        """Run once keeping the whole output; ``parse(output)`` adds metrics. Stored (and
        replayed on resume) like session.run, e.g. a run read for its per-event log lines."""
        key = run_key(spec, rep)
        result = self._replay(key)
        if result is not None:
            return result
        result, output = self.executor.capture(spec)
        self.executed += 1
        if parse is not None:
            result.metrics = {**result.metrics, **parse(output)}
        self.store.add_measurement(self.campaign_id, result, dict(spec.params or {}), rep=rep,
                                   label=spec.label)
        return result

    def stored(self, spec: RunSpec, rep: int = 0) -> bool:
        """Whether session.run(spec, rep) will be answered from the store (no process)."""
        return bool(self._stored) and bool(self._stored.get(run_key(spec, rep)))

    def setup(self, spec: RunSpec) -> RunResult:
        """An unrecorded helper run that always executes (hyperfine's --prepare)."""
        return self.executor.run(spec)

    def warmup(self, spec: RunSpec) -> RunResult | None:
        """An unrecorded run (page cache, lazy builds); skipped when resuming stored work."""
        if self._stored:
            return None
        return self.executor.run(spec)

    def say(self, message: str) -> None:
        self.progress(message)


def _unstored(store: Store) -> Iterator[tuple[str, list[run_journal.JournalRun]]]:
    """Each journal a dead perflab left beside a SQLite store (kill -9 mid-batch: batches are
    journalled beside its file), with its runs that the store lacks."""
    path = getattr(store, "path", None)
    if not path:
        return
    known: set[int] | None = None  # the store's campaigns, asked once: a deleted one gets nothing
    for orphan in run_journal.orphans(path):
        have: dict[int, set[Key] | None] = {}
        missing = []
        for run in run_journal.read(orphan):
            if run.campaign_id not in have:
                if known is None:
                    known = {c.id for c in store.campaigns()}
                have[run.campaign_id] = ({(m.label, canonical_params(m.params), int(m.rep))
                                          for m in store.measurements(run.campaign_id)}
                                         if run.campaign_id in known else None)
            key = (run.label, canonical_params(run.params), run.rep)
            stored = have[run.campaign_id]
            if stored is not None and key not in stored:
                missing.append(run)
                stored.add(key)
        yield orphan, missing


def recover_journals(store: Store) -> int:
    """Store the journalled runs of perflabs that died that the store lacks; how many were added."""
    added = 0
    for orphan, missing in _unstored(store):
        for run in missing:
            store.add_measurement(run.campaign_id, run.result, run.params, rep=run.rep, label=run.label)
            added += 1
        run_journal.discard(orphan)
    return added


def journalled_runs(store: Store) -> dict[int, int]:
    """Campaign id -> runs only a dead perflab's journal holds: measured, not yet in the store,
    what `perflab resume ID` stores. Read-only (a listing must not write)."""
    counts: dict[int, int] = {}
    for _, missing in _unstored(store):
        for run in missing:
            counts[run.campaign_id] = counts.get(run.campaign_id, 0) + 1
    return counts
