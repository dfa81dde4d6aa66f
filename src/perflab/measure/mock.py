"""The deterministic mock executor: virtual time, exact rusage, every spec recorded.

What hyperfine's MockExecutor is to its scheduler: studies, statistics and rendering run on it
exactly and without a process. ``sleep X`` takes X s; ``false`` and ``exit N`` fail.
"""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING, Callable, Generator, Sequence

from perflab.measure.interface import ConcurrentResult
from perflab.model import RunResult, RunSpec

if TYPE_CHECKING:
    from perflab.measure.journal import Journal

_SLEEP = r"^\s*sleep\s+([0-9.]+)\s*$"  # compiled by re on first use: a real run never needs it


def _mock_seconds(spec: RunSpec) -> tuple[float, int]:
    """``sleep X`` takes X s; ``false`` and ``exit N`` fail; anything else takes 0 s."""
    cmd = " ".join(spec.argv) if spec.shell else shlex.join(spec.argv)
    m = re.match(_SLEEP, cmd)
    if m:
        return float(m.group(1)), 0
    if cmd.strip() == "false":
        return 0.0, 1
    m = re.match(r"^\s*exit\s+(\d+)\s*$", cmd)
    if m:
        return 0.0, int(m.group(1))
    return 0.0, 0


class MockExecutor:
    """Deterministic executor for tests: virtual time, exact rusage, every spec recorded.

    ``model(spec)`` may return a RunResult (used as is) or seconds of wall time. The fake
    rusage of a run of X s: user 0.9 X, sys 0.05 X, maxrss 1024 KiB, minflt 100.
    ``output(spec)`` gives the text ``capture`` returns (default: empty).
    """

    live = False  # plays no machine: a study adds no notes on the one it runs on

    def __init__(self, model: Callable[[RunSpec], RunResult | float] | None = None,
                 output: Callable[[RunSpec], str] | None = None) -> None:
        self.model = model
        self.output = output
        self.calls: list[RunSpec] = []
        self.clock_ns = 0

    def now_ns(self) -> int:
        return self.clock_ns

    def wait(self, seconds: float) -> None:
        """Idle for ``seconds`` of virtual time (a study that spreads its runs over time)."""
        self.clock_ns += max(0, round(seconds * 1e9))

    def can_batch(self, spec: RunSpec) -> bool:
        return False  # one run at a time, each on the virtual clock

    def run_batch(self, spec: RunSpec, count: int, journal: Journal | None = None,
                  key: tuple[int, str, dict, int] | None = None) -> Generator[list[RunResult], None, None]:
        raise ValueError("the mock runs one spec at a time: can_batch is always False")

    def _result(self, spec: RunSpec, start: int) -> RunResult:
        exit_code = 0
        if self.model is not None:
            out = self.model(spec)
            if isinstance(out, RunResult):
                return out
            seconds = float(out)
        else:
            seconds, exit_code = _mock_seconds(spec)
        wall = round(seconds * 1e9)
        return RunResult(
            wall_ns=wall, user_s=0.9 * seconds, sys_s=0.05 * seconds, maxrss_kb=1024,
            minflt=100, majflt=0, nvcsw=1, nivcsw=0, exit_code=exit_code,
            start_ns=start, end_ns=start + wall,
            stderr_tail="" if exit_code == 0 else f"mock: exit {exit_code}",
        )

    def run(self, spec: RunSpec) -> RunResult:
        self.calls.append(spec)
        res = self._result(spec, self.clock_ns)
        self.clock_ns += res.wall_ns
        return res

    def capture(self, spec: RunSpec) -> tuple[RunResult, str]:
        res = self.run(spec)
        return res, self.output(spec) if self.output is not None else ""

    def run_concurrent(self, specs: Sequence[RunSpec], together: bool = True) -> ConcurrentResult:
        start = self.clock_ns
        results = []
        for spec in specs:
            self.calls.append(spec)
            results.append(self._result(spec, start))
        self.clock_ns = start + max((r.wall_ns for r in results), default=0)
        return ConcurrentResult(results, 0, start, [start] * len(results), together)

    def close(self) -> None:
        pass

    def __enter__(self) -> "MockExecutor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
