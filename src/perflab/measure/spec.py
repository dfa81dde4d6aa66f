"""What to run (RunSpec) and what one run measured (RunResult): the measure layer's contract."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping


@dataclass(frozen=True)
class MetricPattern:
    """A named-group regex applied to a run's stdout+stderr.

    Every named group that matches becomes a float metric (the last match wins), e.g.
    ``(?P<events>\\d+) events .* (?P<events_per_s>[\\d.]+) events/s``.
    """

    regex: str
    stream: str = "both"  # "stdout", "stderr" or "both"


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
    params: Mapping[str, object] = field(default_factory=dict)  # scan parameters, cpu, n, variant


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
    start_ns: int = 0  # time.monotonic_ns() at spawn (or at gate release for gated runs)
    end_ns: int = 0
    metrics: dict[str, float] = field(default_factory=dict)
    counters: dict[str, float] = field(default_factory=dict)
    stdout_tail: str = ""
    stderr_tail: str = ""  # last lines of stderr, kept when the run failed

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def wall_s(self) -> float:
        return self.wall_ns / 1e9

    def as_dict(self) -> dict[str, object]:
        from dataclasses import asdict

        return asdict(self)
