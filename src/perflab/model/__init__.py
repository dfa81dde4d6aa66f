"""perflab's shared data types: what to run (Workload, RunSpec) and what a run measured (RunResult).

Every layer speaks these; they import nothing of perflab's but the start-up's lazy-name loader,
so any package may import them without a cycle. The command line and perflab.toml map onto them
at the edge.
"""

from __future__ import annotations

import signal as _signal
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Mapping

from perflab.startup import lazy_attributes

# A named workload and its build recipe (workload.py) are loaded when first asked for (PEP 562):
# `perflab run -- CMD` has neither, and their dataclasses cost ~1 ms of its start-up.
__getattr__ = lazy_attributes(__name__, {"Workload": "workload", "BuildRecipe": "workload"})


@dataclass(frozen=True)
class MetricPattern:
    """A named-group regex applied to a run's stdout+stderr.

    Every named group that matches becomes a float metric, e.g.
    ``(?P<events>\\d+) events .* (?P<events_per_s>[\\d.]+) events/s``. Repeated matches
    (progress lines) are combined by ``aggregate``: last (default), first, sum, max, min, count.
    """

    regex: str
    stream: str = "both"  # "stdout", "stderr" or "both"
    aggregate: str = "last"


@dataclass(frozen=True)
class RunSpec:
    """One process to start and measure."""

    argv: tuple[str, ...]
    shell: bool = False  # run argv[0] through /bin/sh -c (only when the user asked for --shell)
    cpus: tuple[int, ...] | None = None  # sched_setaffinity list for the child
    mem_node: int | None = None  # bind memory to this NUMA node (numactl --membind)
    env: Mapping[str, str] | None = None  # added to (overriding) the inherited environment
    cwd: str | None = None
    stdin: str | None = None  # path to feed on stdin; None -> /dev/null
    timeout: float | None = None  # seconds; the child is killed (SIGKILL) when it expires
    metrics: tuple[MetricPattern, ...] = ()
    perf_events: tuple[str, ...] | None = None  # collect `perf stat -e` counters when set
    capture_output: bool = True  # keep stdout/stderr for metrics and the failure tail
    label: str = ""  # the command's display name (hyperfine's "command")
    params: Mapping[str, Any] = field(default_factory=dict)  # scan parameters, cpu, n, variant
    sample_pss: bool = False  # concurrent copies: peak PSS of each copy's tree -> metrics["pss_kb"]
    instrument: str = ""  # how else the run is measured: "" (time, rusage) or "cachegrind"
    series: tuple[MetricPattern, ...] = ()  # per-event lines kept with arrival stamps (measure/series.py)
    skip_events: int | None = None  # the series' warm-up as a count; None: found by a change point


@dataclass
class RunResult:
    """What one run of one process measured (rusage from wait4 on that very child)."""

    wall_ns: int
    user_s: float
    sys_s: float
    maxrss_kb: int
    minflt: int
    majflt: int
    nvcsw: int
    nivcsw: int
    exit_code: int | None  # None when killed by a signal
    signal: int | None = None
    timed_out: bool = False
    start_ns: int = 0  # time.monotonic_ns() at spawn (or when the start barrier released copies)
    end_ns: int = 0
    metrics: dict[str, float] = field(default_factory=dict)
    counters: dict[str, float] = field(default_factory=dict)
    stdout_tail: str = ""
    stderr_tail: str = ""  # last lines of stderr, kept when the run failed
    energy: dict[str, float] = field(default_factory=dict)  # joules per domain, e.g. "pkg0"
    health: dict[str, Any] = field(default_factory=dict)  # what the machine said during the run
    suspect: bool = False  # taken while the machine was disturbed; health says how
    series: bytes = b""  # the run's per-event series, compact (measure/series.encode); stored apart

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def failure(self) -> str | None:
        """Why the run failed, in a few words (None when it succeeded): stored and reported."""
        if self.timed_out:
            return "timed out"
        if self.signal is not None:
            try:
                name = _signal.Signals(self.signal).name
            except ValueError:
                name = f"signal {self.signal}"
            return f"killed by {name}" + (" (out of memory?)" if self.signal == 9 else "")
        if self.exit_code not in (0, None):
            return f"exit status {self.exit_code}"
        if self.exit_code is None:
            return "no exit status"
        return None

    @property
    def wall_s(self) -> float:
        return self.wall_ns / 1e9

    def as_dict(self) -> dict[str, object]:
        d = asdict(self)
        d.pop("series")  # bytes: the store keeps it in a table of its own, JSON has no place for it
        return d


def known_fields(cls: type, d: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``d`` that name a field of dataclass ``cls``: a form stored by another
    perflab version (a field added or dropped since) still loads."""
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in d.items() if k in names}
