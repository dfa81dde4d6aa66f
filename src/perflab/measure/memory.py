"""Memory of running process trees as PSS, sampled while they run.

Why PSS (proportional set size, ``Pss:`` of /proc/PID/smaps_rollup): a page shared by k
processes counts 1/k in each, so the PSS of a forking master and its workers adds up to the
memory they really hold, where max RSS counts the shared static data once per worker (seed 004:
600 MB static, 400-500 MB dynamic per process). The kernel frees a process's page tables when it
exits, so PSS must be read while it runs: a thread samples every copy's tree (the command under
the barrier trampoline and all its descendants, found through /proc/PID/task/PID/children) and keeps
each tree's peak. A copy that ends before the first sample has no figure (None), never a guess.
"""

from __future__ import annotations

import re
import threading
from typing import Sequence

from perflab.platform.sysfs import Root

_PSS = r"(?m)^Pss:\s+(\d+) kB"  # compiled by re on first use, not at every start-up


def parse_pss_kb(text: str | None) -> int | None:
    """The ``Pss:`` line of a smaps_rollup text, in KiB (None when absent)."""
    m = re.search(_PSS, text or "")
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


PF_EXITING = 0x4  # include/linux/sched.h: the task is tearing down its memory


def exiting(root: Root, pid: int) -> bool:
    """The process is a zombie or on its way out (its pages are being unmapped)."""
    text = root.read(f"proc/{pid}/stat")
    if not text or ")" not in text:
        return True  # gone
    fields = text[text.rindex(")") + 2:].split()  # state ppid pgrp session tty tpgid flags ...
    try:
        return fields[0] in ("Z", "X", "x") or bool(int(fields[6]) & PF_EXITING)
    except (IndexError, ValueError):
        return True


def tree(root: Root, pid: int, include_self: bool = True) -> list[int]:
    """``pid`` (optionally) and all its descendants, parents before children."""
    out: list[int] = []
    stack = [pid] if include_self else children(root, pid)
    while stack:
        p = stack.pop()
        out.append(p)
        stack.extend(children(root, p))
    return out


def tree_pss_kb(root: Root, pid: int, include_self: bool = True) -> int | None:
    """Summed PSS of a process tree, harness processes left out; None if nothing could be read
    or the tree changed while it was read.

    Why: the files are read one after another, and sharing changes while they are read. A master
    read just before it forks counts its pages whole, then its new workers count their shares
    again; a worker that is exiting unmaps its pages, so the others' shares grow before its own
    is gone (samples 15-60 % above every process's max RSS were seen with minihlt --fork 3). A
    sample is kept only if the same processes are there before and after it was read and none
    of them is exiting.
    """
    before = tree(root, pid, include_self)
    if any(exiting(root, p) for p in before):
        return None
    total, seen = 0, False
    for p in before:
        if root.read(f"proc/{p}/comm") in HARNESS:
            continue
        kb = parse_pss_kb(root.read(f"proc/{p}/smaps_rollup"))
        if kb is not None:
            total += kb
            seen = True
    after = tree(root, pid, include_self)
    if not seen or sorted(after) != sorted(before) or any(exiting(root, p) for p in after):
        return None
    return total


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
            peak = self.peaks[pid]
            if kb is not None and (peak is None or kb > peak):
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
