"""`perf stat` counters around one run: argv wrapping and CSV parsing.

Software counters work everywhere perf works; hardware counters need a PMU (absent in most
VMs). When perf answers ``<not supported>`` for an event we say so once per process and stop
asking for it, so later runs pay only for what this machine can count.
"""

from __future__ import annotations

import re
import sys
from typing import Sequence

from perflab.startup import which

# duration_time: the command's own wall time in ns as perf saw it (the run's wall time and
# rusage then include perf's start-up, ~10 ms and ~13 MiB here).
SOFTWARE_EVENTS = ("duration_time", "task-clock", "context-switches", "cpu-migrations", "page-faults")
HARDWARE_EVENTS = ("cycles", "instructions", "branches", "branch-misses")
DEFAULT_EVENTS = SOFTWARE_EVENTS + HARDWARE_EVENTS

_unsupported: set[str] = set()  # events perf said it cannot count here (per process)
_noted: set[str] = set()  # one-line notes already printed


def note_once(key: str, message: str) -> None:
    """Print ``perflab: note: message`` to stderr the first time ``key`` is seen."""
    if key in _noted:
        return
    _noted.add(key)
    print(f"perflab: note: {message}", file=sys.stderr, flush=True)


def perf_binary() -> str | None:
    return which("perf")


def requested_events(events: Sequence[str]) -> tuple[str, ...]:
    """The events to ask perf for: the default set for an empty request, minus known-unsupported."""
    wanted = tuple(events) or DEFAULT_EVENTS
    return tuple(e for e in wanted if e not in _unsupported) or SOFTWARE_EVENTS


def wrap(argv: Sequence[str], events: Sequence[str], output_path: str) -> tuple[str, ...] | None:
    """``perf stat -x, -o FILE -e EVENTS -- argv``, or None (noted once) when perf is missing."""
    perf = perf_binary()
    if perf is None:
        note_once("perf-missing", "perf is not installed: runs go on without counters "
                  "(install linux-perf for them)")
        return None
    evs = requested_events(events)
    return (perf, "stat", "-x,", "-o", output_path, "-e", ",".join(evs), "--", *argv)


def parse(text: str) -> tuple[dict[str, float], list[str]]:
    """Parse ``perf stat -x,`` output of one command into {event: value} and the unsupported events.

    Fields (perf-stat(1), CSV FORMAT): value, unit, event, run time, percentage of run time
    counted, [metric value, metric unit]; lines with an empty value (metric-only rows, metric-group
    headers) carry no count. ``-I`` puts a timestamp first: the counts of every interval are summed,
    unless a ``--summary`` block gives the whole run, which is then used alone (``summary`` in the
    first column since perf 5.13; before it, and with ``--no-cvs-summary``, the same rows without
    a timestamp, which summed with the intervals would count the run twice). Values are perf's own estimates: when events were multiplexed (percentage < 100) perf has
    already scaled them to the whole run.

    Hybrid CPUs name an event per PMU (``cpu_core/cycles/``, ``cpu_atom/cycles/``). For one command
    (not ``-a``) both rows count the same task while it runs on that core type, and perf scales each
    to the task's whole enabled time (a task that ran 1 % of its time on an E-core gets its E-core
    count multiplied by about 100; recorded: tests/data/perfstat/intel-hybrid-saxpy-llc-per-task.csv).
    Summing the two estimates counts the run about twice; the estimate for the whole run is their
    mean weighted by each row's run time, which is the sum of the raw counts when nothing was
    multiplexed.
    """
    interval: list[tuple[str, str, float, float, bool]] = []  # (timestamp, event, value, run time, hybrid)
    total: list[tuple[str, str, float, float, bool]] = []
    unsupported: list[str] = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split(",")
        rows, stamp = total, ""
        if len(fields) >= 4 and fields[0].strip() == "summary":
            fields = fields[1:]  # --summary with -I: the whole run
        elif len(fields) >= 4 and re.fullmatch(_INTERVAL, fields[0]) and re.match(_VALUE, fields[1]):
            rows, stamp, fields = interval, fields[0].strip(), fields[1:]
        if len(fields) < 3:
            continue
        value, raw_event = fields[0].strip(), fields[2].strip()
        event = _event_name(raw_event)
        if not event:
            continue
        if value.startswith("<not supported>"):
            if event not in unsupported:
                unsupported.append(event)
            continue
        if value.startswith("<"):  # <not counted>: multiplexed out or the command ended first
            continue
        try:
            rows.append((stamp, event, float(value), _float(fields[3] if len(fields) > 3 else ""),
                         raw_event.startswith(("cpu_core/", "cpu_atom/"))))
        except ValueError:
            continue
    counters: dict[str, float] = {}
    for (_, event), group in _grouped(total or interval).items():
        counters[event] = counters.get(event, 0.0) + _combined(group)
    return counters, unsupported


# compiled by re on first use: `perflab run` without --perf-stat never reads perf's output
_INTERVAL = r"\s*\d+\.\d+"
_VALUE = r"\s*(<not |[\d.]+$)"


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0


def _grouped(rows: list[tuple[str, str, float, float, bool]]) -> dict[tuple[str, str], list[tuple[float, float, bool]]]:
    """Rows by (timestamp, event), in order of first appearance."""
    out: dict[tuple[str, str], list[tuple[float, float, bool]]] = {}
    for stamp, event, value, run, hybrid in rows:
        out.setdefault((stamp, event), []).append((value, run, hybrid))
    return out


def _combined(group: list[tuple[float, float, bool]]) -> float:
    """One event's value in one block: per-PMU rows of a hybrid CPU weighted by their run time
    (see parse), any other repeats summed."""
    plain = sum(v for v, _, hybrid in group if not hybrid)
    hyb = [(v, run) for v, run, hybrid in group if hybrid]
    if not hyb:
        return plain
    runs = sum(run for _, run in hyb)
    return plain + (sum(v * run for v, run in hyb) / runs if runs > 0 else sum(v for v, _ in hyb))


def _event_name(raw: str) -> str:
    """``cpu_core/iTLB-load-misses/`` -> ``iTLB-load-misses``, ``cpu_atom/cycles/u`` -> ``cycles:u``
    (the name perflab asks for); other names unchanged."""
    m = re.fullmatch(r"cpu(?:_core|_atom)?/([^/]+)/:?(\w*)", raw)
    if not m:
        return raw
    return m.group(1) + (":" + m.group(2) if m.group(2) else "")


def as_asked(counters: dict[str, float], unsupported: list[str],
             events: Sequence[str]) -> tuple[dict[str, float], list[str]]:
    """Counters and unsupported events under the names asked for.

    Without root and with kernel.perf_event_paranoid at 2 (Debian's default), perf counts user
    space only and says so by naming each event ``task-clock:u``; the counts keep the name perflab
    asked for (a study compares runs by it), and a note says once that the kernel's share is left
    out. An event asked for with a modifier keeps it."""
    asked = set(requested_events(events))

    def name(event: str) -> str:
        base, _, mod = event.rpartition(":")
        return base if mod == "u" and base in asked and event not in asked else event

    renamed = {name(e): v for e, v in counters.items()}
    if any(name(e) != e for e in (*counters, *unsupported)):
        note_once("user-space-only", "perf counts user space only here (no root, "
                  "kernel.perf_event_paranoid 2 or more): the counters leave the kernel's share out; "
                  "run as root, or lower kernel.perf_event_paranoid to 1, to count it")
    return renamed, [name(e) for e in unsupported]


def per_unit(counters: dict[str, float], event: str, units: float) -> float | None:
    """``event`` counted per unit of work (e.g. iTLB misses per dispatch), or None if not counted."""
    if event not in counters or units <= 0:
        return None
    return counters[event] / units


def record_unsupported(events: Sequence[str]) -> None:
    """Remember unsupported events and say so in one line (once per process)."""
    new = [e for e in events if e not in _unsupported]
    if not new:
        return
    _unsupported.update(new)
    hw = [e for e in new if e in HARDWARE_EVENTS]
    if hw:
        note_once(
            "hw-counters",
            f"hardware counters are not supported on this machine ({', '.join(hw)}): "
            "carrying on with software counters",
        )
    other = [e for e in new if e not in HARDWARE_EVENTS]
    if other:
        note_once("unsupported:" + ",".join(other),
                  f"perf cannot count {', '.join(other)} here: carrying on without them")
