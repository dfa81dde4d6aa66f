"""Memory of running process trees as PSS, sampled while they run.

Why PSS (proportional set size, ``Pss:`` of /proc/PID/smaps_rollup): a page shared by k
processes counts 1/k in each, so the PSS of a forking master and its workers adds up to the
memory they really hold, where max RSS counts the shared static data once per worker (seed 004:
600 MB static, 400-500 MB dynamic per process). The kernel frees a process's page tables when it
exits, so PSS must be read while it runs: a thread samples every copy's tree (the command under
the gate trampoline and all its descendants, found through /proc/PID/task/PID/children) and keeps
each tree's peak. A copy that ends before the first sample has no figure (None), never a guess.
"""

from __future__ import annotations

import re
import threading
from typing import Sequence

from perflab.platform.sysfs import Root

_PSS = re.compile(r"(?m)^Pss:\s+(\d+) kB")


def parse_pss_kb(text: str | None) -> int | None:
    """The ``Pss:`` line of a smaps_rollup text, in KiB (None when absent)."""
    m = _PSS.search(text or "")
    return int(m.group(1)) if m else None


def children(root: Root, pid: int) -> list[int]:
    """Direct children of every thread of ``pid``."""
    out: list[int] = []
    for tid in root.listdir(f"proc/{pid}/task"):
        text = root.read(f"proc/{pid}/task/{tid}/children", "") or ""
        out.extend(int(x) for x in text.split())
    return out


# Harness processes between the trampoline and the command (perf stat around a copy, numactl
# before its exec): their own pages are not the workload's, their children are.
HARNESS = ("perf",)


def tree_pss_kb(root: Root, pid: int, include_self: bool = True) -> int | None:
    """Summed PSS of ``pid`` (optionally) and all its descendants, harness processes left out;
    None if none could be read."""
    total, seen = 0, False
    stack = [pid] if include_self else children(root, pid)
    while stack:
        p = stack.pop()
        stack.extend(children(root, p))
        if root.read(f"proc/{p}/comm") in HARNESS:
            continue
        kb = parse_pss_kb(root.read(f"proc/{p}/smaps_rollup"))
        if kb is not None:
            total += kb
            seen = True
    return total if seen else None


class PssSampler:
    """Peak tree PSS of each given process (excluding the process itself: the trampoline)."""

    def __init__(self, pids: Sequence[int], root: Root = Root("/"), interval: float = 0.05) -> None:
        self.pids = list(pids)
        self.root = root
        self.interval = interval
        self.peaks: dict[int, int | None] = {p: None for p in self.pids}
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="perflab-pss", daemon=True)

    def sample(self) -> None:
        for pid in self.pids:
            kb = tree_pss_kb(self.root, pid, include_self=False)
            if kb is not None and (self.peaks[pid] is None or kb > self.peaks[pid]):
                self.peaks[pid] = kb
        self.samples += 1

    def _loop(self) -> None:
        while True:
            self.sample()
            if self._stop.wait(self.interval):
                return

    def start(self) -> "PssSampler":
        self._thread.start()
        return self

    def stop(self) -> dict[int, int | None]:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        return dict(self.peaks)
