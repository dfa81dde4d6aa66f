"""The executor interface: what every executor (real processes, the mock) offers a study.

A study never starts a process itself; it hands RunSpecs to an Executor through its Session, so
the deterministic MockExecutor can play every run a study makes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generator, Protocol, Sequence

from perflab.model import RunResult, RunSpec

if TYPE_CHECKING:
    from perflab.measure.journal import Journal


@dataclass
class ConcurrentResult:
    """N copies started together: each copy's run and how tightly their starts lined up."""

    results: list[RunResult]
    start_spread_ns: int  # max - min of the moments the copies actually started
    release_ns: int  # time.monotonic_ns() when the start barrier opened (or the first spawn)
    starts_ns: list[int] = field(default_factory=list)  # each copy's own start moment
    together: bool = True  # released together by the start barrier (else one after another)


class Executor(Protocol):
    """Runs specs and says what they measured: everything a study or its Session asks of one."""

    live: bool  # measures this machine (a study then adds notes on it); the mock plays none

    def run(self, spec: RunSpec) -> RunResult: ...

    def run_concurrent(self, specs: Sequence[RunSpec], together: bool = True) -> ConcurrentResult: ...

    def capture(self, spec: RunSpec) -> tuple[RunResult, str]:
        """Run once and return the full output too (stdout then stderr), e.g. per-event log lines."""
        ...

    def now_ns(self) -> int:
        """The executor's clock (virtual under the mock), for a study's own time limits."""
        ...

    def wait(self, seconds: float) -> None:
        """Idle for ``seconds`` on that clock (a study that spreads its runs over time)."""
        ...

    def can_batch(self, spec: RunSpec) -> bool:
        """Whether runs of ``spec`` can go back to back through ``run_batch``."""
        ...

    def run_batch(self, spec: RunSpec, count: int, journal: Journal | None = None,
                  key: tuple[int, str, dict, int] | None = None) -> Generator[list[RunResult], None, None]:
        """Up to ``count`` runs of ``spec`` back to back, yielded in groups as they end; only for a
        spec that ``can_batch``."""
        ...


class RealClock:
    """The clock of executors that run real processes: the monotonic clock, and waits that sleep
    (the mock's clock is virtual)."""

    @staticmethod
    def now_ns() -> int:
        return time.monotonic_ns()

    @staticmethod
    def wait(seconds: float) -> None:
        time.sleep(seconds)
