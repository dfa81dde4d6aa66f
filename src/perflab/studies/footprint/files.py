"""What a trace says about files: every path the workload used, what it is on disk, and the
look-ups that failed.

Every path opened, stat-ed, executed or read as a link is listed with its symlinks resolved;
failed look-ups are listed apart. Files the kernel opens itself (the ELF interpreter, a script's
``#!`` interpreter) never appear in a trace, so they are added by reading the executables.
"""

from __future__ import annotations

import os
import stat as stat_mod
from dataclasses import dataclass
from typing import Sequence

from perflab.platform import strace
from perflab.platform.files import interpreters, join_path, resolve_links

OPEN_CALLS = {"open", "openat", "openat2", "creat", "open_by_handle_at"}
STAT_CALLS = {"stat", "lstat", "stat64", "lstat64", "newfstatat", "fstatat64", "statx", "access",
              "faccessat", "faccessat2", "statfs", "statfs64", "oldstat", "oldlstat", "getxattr",
              "lgetxattr", "listxattr", "llistxattr"}
EXEC_CALLS = {"execve", "execveat"}
READLINK_CALLS = {"readlink", "readlinkat"}
# *at calls: argument 0 is a directory fd, the path is argument 1
AT_CALLS = {"openat", "openat2", "newfstatat", "fstatat64", "statx", "faccessat", "faccessat2",
            "execveat", "readlinkat", "mkdirat", "unlinkat", "fchmodat", "fchownat", "utimensat",
            "futimesat", "mknodat", "name_to_handle_at", "renameat", "renameat2", "linkat"}
FORK_CALLS = {"clone", "clone3", "fork", "vfork"}
WRITE_FLAGS = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND")
VIRTUAL_ROOTS = ("/proc", "/sys", "/dev", "/run")


@dataclass(frozen=True)
class FileUse:
    """One path the workload used, as it named it, and what it is on disk now."""

    path: str
    uses: tuple[str, ...]  # sorted subset of open, stat, exec, readlink, chdir, interp, other
    real_path: str  # after every symlink on the way
    links: tuple[tuple[str, str], ...]  # (symlink, its target text) met while resolving
    kind: str  # file, dir, virtual (/proc, /sys, /dev), gone (no longer there), other
    size: int
    written: bool  # opened for writing (an output, not an input)


@dataclass(frozen=True)
class FailedLookup:
    path: str
    uses: tuple[str, ...]
    errno: str


@dataclass(frozen=True)
class TopDir:
    top: str
    files: int
    bytes: int


def files_used(calls: Sequence[strace.Syscall], cwd: str) -> tuple[list[FileUse], list[FailedLookup]]:
    """Turn parsed syscalls into the files used and the failed look-ups."""
    cwds: dict[int, str] = {}
    first_pid = calls[0].pid if calls else 0
    cwds[first_pid] = cwd
    used: dict[str, set[str]] = {}
    written: set[str] = set()
    failed: dict[str, tuple[set[str], str]] = {}

    for c in calls:
        here = cwds.get(c.pid, cwd)
        if c.name in FORK_CALLS:
            child = c.ret_int
            if child and child > 0:
                cwds[child] = here
            continue
        if c.name in AT_CALLS:
            dir_path = c.fd_path(0)
            if c.args and c.args[0].startswith("AT_FDCWD") and dir_path:
                cwds[c.pid] = here = dir_path  # strace -y shows the cwd: trust it
            raw = c.string_arg(1)
            base = dir_path or here
        else:
            raw = c.string_arg(0)
            base = here
        if c.name == "fchdir":
            p = c.fd_path(0)
            if p and not c.failed:
                cwds[c.pid] = p
            continue
        if raw is None or raw == "":
            continue  # fstatat(fd, "", AT_EMPTY_PATH): a call on an open fd, not a look-up
        path = join_path(base, raw)
        if c.name == "chdir":
            if not c.failed:
                cwds[c.pid] = path
            use = "chdir"
        elif c.name in OPEN_CALLS:
            use = "open"
            if any(flag in " ".join(c.args[1:]) for flag in WRITE_FLAGS):
                written.add(path)
        elif c.name in STAT_CALLS:
            use = "stat"
        elif c.name in EXEC_CALLS:
            use = "exec"
        elif c.name in READLINK_CALLS:
            use = "readlink"
        else:
            use = "other"
        if c.failed:
            uses, errno = failed.setdefault(path, (set(), c.errno or "error"))
            uses.add(use)
        else:
            used.setdefault(path, set()).add(use)

    # The kernel maps the ELF interpreter (and runs #! interpreters) without a traced open.
    for path in [p for p, u in used.items() if "exec" in u]:
        todo = interpreters(path)
        while todo:
            interp = todo.pop()
            if interp not in used:
                used[interp] = {"interp"}
                todo.extend(interpreters(interp))

    files = [_describe(path, tuple(sorted(uses)), path in written) for path, uses in sorted(used.items())]
    # A path that failed once but worked later is not a failed look-up.
    lost = [FailedLookup(p, tuple(sorted(u)), e) for p, (u, e) in sorted(failed.items()) if p not in used]
    return files, lost


def _describe(path: str, uses: tuple[str, ...], written: bool) -> FileUse:
    if path == "/" or any(path == r or path.startswith(r + "/") for r in VIRTUAL_ROOTS):
        return FileUse(path, uses, path, (), "virtual" if path != "/" else "dir", 0, written)
    real, links = resolve_links(path)
    try:
        st = os.stat(real)
    except OSError:
        return FileUse(path, uses, real, tuple(links), "gone", 0, written)
    if stat_mod.S_ISREG(st.st_mode):
        kind, size = "file", st.st_size
    elif stat_mod.S_ISDIR(st.st_mode):
        kind, size = "dir", 0
    else:
        kind, size = "other", 0
    if any(real == r or real.startswith(r + "/") for r in VIRTUAL_ROOTS):
        kind = "virtual"
    return FileUse(path, uses, real, tuple(links), kind, size, written)


def by_top_dir(files: Sequence[FileUse]) -> list[TopDir]:
    """Count and size of the needed regular files per top directory of their real path."""
    acc: dict[str, list[int]] = {}
    seen: set[str] = set()
    for f in files:
        if f.kind != "file" or f.real_path in seen:
            continue
        seen.add(f.real_path)
        top = "/" + f.real_path.strip("/").split("/", 1)[0]
        a = acc.setdefault(top, [0, 0])
        a[0] += 1
        a[1] += f.size
    return [TopDir(t, n, b) for t, (n, b) in sorted(acc.items(), key=lambda kv: -kv[1][1])]


def needed(files: Sequence[FileUse]) -> list[FileUse]:
    """Existing regular files read, executed or loaded: what a bundle must carry."""
    return [f for f in files if f.kind == "file" and not (f.written and set(f.uses) <= {"open"})]
