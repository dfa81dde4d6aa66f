"""The Executor that footprint's and bundle's Sessions run: a spec whose params say mode "traced"
runs under ``strace -f`` through the executor beside it, and its trace is read at once into the
run's health (the files it used, as they are on disk then). The stored run so carries all the
analysis needs: a resumed campaign replays it and never needs the trace file again. Other specs
go straight through."""

from __future__ import annotations

import os
import shutil
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generator, Sequence

from perflab.errors import PerflabError
from perflab.measure.interface import ConcurrentResult, Executor
from perflab.model import RunResult, RunSpec
from perflab.platform import strace
from perflab.studies.footprint.files import FailedLookup, FileUse, files_used

TRACED = "traced"
HEALTH_KEY = "trace"

if TYPE_CHECKING:
    from perflab.measure.journal import Journal


def strace_missing() -> PerflabError:
    return PerflabError("strace is not installed: apt-get install strace (or run make lab)")


class Tracing:
    """Executor adapter: traced specs under strace (their files in health), the rest unchanged."""

    def __init__(self, executor: Executor, seccomp: bool, tmpdir: str) -> None:
        self.executor, self.seccomp, self.tmpdir = executor, seccomp, tmpdir
        self.live = executor.live
        self.keep: str | None = None  # copy the next trace's raw text here (footprint --trace)
        self.traces = 0

    def run(self, spec: RunSpec) -> RunResult:
        if (spec.params or {}).get("mode") != TRACED:
            return self.executor.run(spec)
        if strace.strace_path() is None:
            raise strace_missing()
        self.traces += 1
        out = os.path.join(self.tmpdir, f"trace{self.traces}.txt")
        result = self.executor.run(replace(spec, argv=(*strace.strace_argv(out, self.seccomp), *spec.argv),
                                           shell=False))
        try:
            text = Path(out).read_text(errors="replace")
        except OSError:
            text = ""
        calls = strace.parse(text)
        files, failed = files_used(calls, spec.cwd or os.getcwd())
        if self.keep and os.path.exists(out):
            # copied before the Session stores the run: a stored traced run has its copy
            shutil.copyfile(out, self.keep)
        result.health[HEALTH_KEY] = {"files": [asdict(f) for f in files], "failed": [asdict(f) for f in failed],
                                     "syscalls": len(calls), "seccomp": self.seccomp}
        return result

    def capture(self, spec: RunSpec) -> tuple[RunResult, str]:
        return self.executor.capture(spec)

    def run_concurrent(self, specs: Sequence[RunSpec], together: bool = True) -> ConcurrentResult:
        raise ValueError("a footprint traces one process tree at a time")

    def now_ns(self) -> int:
        return self.executor.now_ns()

    def wait(self, seconds: float) -> None:
        self.executor.wait(seconds)

    def can_batch(self, spec: RunSpec) -> bool:
        return False  # each traced run's file is read as it ends

    def run_batch(self, spec: RunSpec, count: int, journal: Journal | None = None,
                  key: tuple[int, str, dict, int] | None = None) -> Generator[list[RunResult], None, None]:
        raise ValueError("footprint runs one at a time: can_batch is always False")


def trace_of(result: RunResult) -> tuple[list[FileUse], list[FailedLookup], int]:
    """(files used, failed look-ups, system calls traced) a traced run's health holds."""
    t: dict[str, Any] = result.health.get(HEALTH_KEY) or {}
    files = [FileUse(f["path"], tuple(f["uses"]), f["real_path"], tuple((a, b) for a, b in f["links"]),
                     f["kind"], int(f["size"]), bool(f["written"])) for f in t.get("files", [])]
    failed = [FailedLookup(f["path"], tuple(f["uses"]), f["errno"]) for f in t.get("failed", [])]
    return files, failed, int(t.get("syscalls", 0))
