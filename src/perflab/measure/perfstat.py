"""`perf stat` counters around one run: argv wrapping and CSV parsing.

Software counters work everywhere perf works; hardware counters need a PMU (absent in most
VMs). When perf answers ``<not supported>`` for an event we say so once per process and stop
asking for it, so later runs pay only for what this machine can count.
"""

from __future__ import annotations

import re
import shutil
import sys
from typing import Sequence

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
    return shutil.which("perf")


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
    """Parse ``perf stat -x,`` output into {event: value} and the list of unsupported events.

    Fields (perf-stat(1), CSV FORMAT): value, unit, event, run time, percentage of run time
    counted, [metric value, metric unit]. ``-I`` puts a timestamp first (the counts of every
    interval are summed); hybrid CPUs name an event per PMU (``cpu_core/cycles/``,
    ``cpu_atom/cycles/``): both count the same task on different cores, so they are summed too.
    Values are perf's own estimates: when events were multiplexed (percentage < 100) perf has
    already scaled them to the whole run.
    """
    counters: dict[str, float] = {}
    unsupported: list[str] = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split(",")
        if len(fields) >= 4 and _INTERVAL.fullmatch(fields[0]) and _VALUE.match(fields[1]):
            fields = fields[1:]  # -I: the interval's timestamp
        if len(fields) < 3:
            continue
        value, event = fields[0].strip(), _event_name(fields[2].strip())
        if not event:
            continue
        if value.startswith("<not supported>"):
            if event not in unsupported:
                unsupported.append(event)
            continue
        if value.startswith("<"):  # <not counted>: multiplexed out or the command ended first
            continue
        try:
            counters[event] = counters.get(event, 0.0) + float(value)
        except ValueError:
            continue
    return counters, unsupported


_INTERVAL = re.compile(r"\s*\d+\.\d+")
_VALUE = re.compile(r"\s*(<not |[\d.]+$)")


def _event_name(raw: str) -> str:
    """``cpu_core/iTLB-load-misses/`` -> ``iTLB-load-misses``; other names unchanged."""
    m = re.fullmatch(r"cpu(?:_core|_atom)?/([^/]+)/(:?\w*)", raw)
    return m.group(1) + m.group(2) if m else raw


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
