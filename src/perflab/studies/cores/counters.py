"""Hardware counters in a per-core scan: IPC and effective frequency per CPU.

Each run is wrapped in ``perf stat -e task-clock,cycles,instructions``. Per CPU: the median over
its successful runs of IPC = instructions / cycles and of the effective frequency = cycles /
task-clock. A slow core at the same IPC runs fewer cycles per second (a frequency problem:
power capping, a thermal limit, a lower turbo bin); at a lower IPC it does less per cycle (front
end, caches, TLB: seed 001's case). Where the PMU is absent (most virtual machines, this one),
perf reports the events as not supported: one note, and the timings carry the verdict alone.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from perflab.studies.cores.result import CoresResult

COUNTER_EVENTS = ("task-clock", "cycles", "instructions")
SAME_IPC = 0.02  # IPC within 2 % of the other cores' counts as the same work per cycle


def counter(counters: Mapping[str, float], event: str) -> float | None:
    """A counter by name, with or without perf's modifier suffix (cycles:u)."""
    for key, value in counters.items():
        if key.split(":")[0] == event:
            return value
    return None


def per_cpu_counters(res: CoresResult, runs: Sequence[tuple[int, Mapping[str, float]]]) -> None:
    """Fill ``ipc`` and ``ghz`` of every CPU from (cpu, counters) of successful runs, and a note
    per slow core saying which of the two moved; a note instead where nothing was counted."""
    import numpy as np

    per: dict[int, list[tuple[float, float]]] = {}
    for cpu, counters in runs:
        clock, cyc, ins = (counter(counters, e) for e in COUNTER_EVENTS)
        if cyc and ins is not None and clock:
            per.setdefault(cpu, []).append((ins / cyc, cyc / (clock * 1e6)))  # task-clock is in ms
    if not per:
        res.notes.append("no hardware counters here (cycles and instructions not supported: no PMU, "
                         "as in most virtual machines): IPC and frequency per CPU not measured")
        return
    for row in res.cpus:
        if row.cpu in per:
            row.ipc, row.ghz = (float(v) for v in np.median(np.array(per[row.cpu]), axis=0))
    for s in res.slow:
        mine = [r for r in res.cpus if r.cpu in s.cpus and r.ipc]
        rest = [r for r in res.cpus if r.cpu not in s.siblings and r.ipc]
        if not (mine and rest):
            continue
        first = mine[0]
        assert first.ipc is not None and first.ghz is not None  # kept for its ipc; ghz is read with it
        ipc = first.ipc / float(np.median([r.ipc for r in rest]))
        ghz = first.ghz / float(np.median([r.ghz for r in rest]))
        why = ("a frequency problem: the same work per cycle, fewer cycles per second" if ipc > 1 - SAME_IPC
               else "the core does less per cycle (front end, caches, TLB), not a lower clock")
        res.notes.append(f"core {s.core}: IPC {ipc - 1:+.1%} and frequency {ghz - 1:+.1%} against the "
                         f"other cores: {why}")
