"""The run journal: what lets perflab store run k while run k+1 is already running, and still
lose at most the run in flight when it is killed.

A batch of runs goes back to back in the spawn server (kernels/spawnserver.c), which appends
each run's record to this file before it starts the next one; perflab stores the record in the
results store as it reads it from the server's pipe, off the runs' critical path. So a
measurement is written to a file (the journal) before the next run starts, as a committed
SQLite transaction in WAL mode with synchronous=NORMAL is (store/lite.py): both survive the
death of perflab, neither an fsync-less power cut. The journal holds at most the current batch
(cleared when a batch is all stored) and goes away when its session closes.

A journal sits beside its SQLite file as ``<db>.perflab-runs-<pid>``; its writer holds an
exclusive flock on it for its whole life. A journal whose lock is free belongs to a perflab
that died: ``orphans`` finds it, ``read`` gives its runs back, and the resume of the campaign
stores those the store lacks (studies/session.py).

A line: TAG<tab>INDEX<tab>R START END STATUS UT ST RSS MINFLT MAJFLT NVCSW NIVCSW TIMED_OUT
<tab>health texts. TAG is JSON [campaign, label, params, first rep, cpus]; the run is rep
first+INDEX; the health texts are the first lines of HealthProbe.paths(cpus).
"""

from __future__ import annotations

import fcntl
import json
import os
from typing import NamedTuple

from perflab.measure.health import HealthProbe
from perflab.measure.server import record_result
from perflab.model import RunResult
from perflab.platform.sysfs import Root

SUFFIX = ".perflab-runs-"


class JournalRun(NamedTuple):
    campaign_id: int
    label: str
    params: dict
    rep: int
    result: RunResult


class Journal:
    """This process's journal beside a SQLite store, locked while it lives."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(self.fd)
            raise

    @classmethod
    def beside(cls, db_path: str | None) -> "Journal | None":
        """A journal for the SQLite file ``db_path``; None where there is no file or the
        directory is not writable (runs then go one at a time, each committed before the next)."""
        if not db_path:
            return None
        try:
            return cls(f"{db_path}{SUFFIX}{os.getpid()}")
        except OSError:
            return None

    @staticmethod
    def tag(campaign_id: int, label: str, params: dict, rep: int, cpus: tuple[int, ...]) -> str:
        # json.dumps escapes tabs and newlines inside strings: the tag is one field of one line
        return json.dumps([campaign_id, label, params, rep, list(cpus)], separators=(",", ":"))

    def clear(self) -> None:
        """Everything journalled so far is in the store."""
        os.ftruncate(self.fd, 0)

    def close(self) -> None:
        """Remove the journal if everything in it is stored (it is empty); else leave it to be
        recovered (its lock goes with this process's fd)."""
        try:
            if os.fstat(self.fd).st_size == 0:
                os.unlink(self.path)
        except OSError:
            pass
        os.close(self.fd)


def orphans(db_path: str) -> list[str]:
    """Journals beside ``db_path`` whose writer is gone (their lock is free)."""
    folder, base = os.path.split(os.path.abspath(db_path))
    try:
        names = [n for n in os.listdir(folder or ".") if n.startswith(base + SUFFIX)]
    except OSError:
        return []
    found = []
    for name in names:
        path = os.path.join(folder, name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            found.append(path)
        except OSError:
            pass  # its perflab is alive
        finally:
            os.close(fd)
    return sorted(found)


def read(path: str, root: Root = Root("/")) -> list[JournalRun]:
    """The complete records of a journal (a torn last line, cut by the kill, is skipped)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().split("\n")[:-1]  # only lines that ended
    except OSError:
        return []
    probe: HealthProbe | None = None
    out = []
    for line in lines:
        parts = line.split("\t")
        try:
            campaign_id, label, params, rep0, cpus = json.loads(parts[0])
            fields = parts[2].split()
            result = record_result(fields)
            index = int(parts[1])
        except (ValueError, IndexError, TypeError):
            continue
        if probe is None:
            probe = HealthProbe(root)
        result.health, result.suspect = probe.sample_texts(parts[3:], result.end_ns, tuple(cpus))
        out.append(JournalRun(int(campaign_id), str(label), dict(params), int(rep0) + index, result))
    return out


def discard(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
