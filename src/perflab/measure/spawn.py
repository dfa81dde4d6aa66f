"""Process start without a shell: posix_spawnp with affinity, cwd, NUMA binding and redirections.

posix_spawn has no affinity or chdir attribute, so we set them on the calling thread just for
the spawn and restore them after: the child inherits both at clone time, which is race-free
(``sched_setaffinity(pid)`` after spawn would let the child run its first instructions
elsewhere) and costs two syscalls instead of the ~1 ms exec of a ``taskset`` trampoline.
Memory binding has no such inheritance hook we can reach from Python, so ``mem_node`` goes
through ``numactl --membind=N`` (one extra exec, about 1 ms, only when asked).
"""

from __future__ import annotations

import os
import signal
from typing import Mapping, Sequence

from perflab.errors import PerflabError
from perflab.model import RunSpec
from perflab.platform.affinity import usable_cpus
from perflab.startup import which

# Python ignores SIGPIPE and SIGXFSZ; ignored dispositions survive exec, so reset them or the
# child would not die on a closed pipe the way it does under a shell.
_SIGDEF = (signal.SIGPIPE, signal.SIGXFSZ)


def base_argv(spec: RunSpec) -> tuple[str, ...]:
    """The command itself: argv, or ``/bin/sh -c CMD`` when the spec asks for a shell."""
    if not spec.argv:
        raise PerflabError("empty command: give a program to run after --")
    if spec.shell:
        return ("/bin/sh", "-c", " ".join(spec.argv))
    return tuple(spec.argv)


def membind_argv(argv: Sequence[str], node: int | None) -> tuple[str, ...]:
    if node is None:
        return tuple(argv)
    numactl = which("numactl")
    if numactl is None:
        raise PerflabError("memory binding needs numactl: install it (apt-get install numactl)")
    return (numactl, f"--membind={node}", "--", *argv)


def check_command(argv: Sequence[str], shell: bool = False) -> None:
    """Raise a one-line PerflabError if the program does not exist or cannot be executed."""
    if shell or not argv:
        return
    prog = argv[0]
    if "/" in prog:
        if not os.path.exists(prog):
            raise PerflabError(f"command '{prog}' not found: check the path")
        if os.path.isdir(prog) or not os.access(prog, os.X_OK):
            raise PerflabError(f"command '{prog}' is not executable: chmod +x it or fix the path")
    elif which(prog) is None:
        raise PerflabError(f"command '{prog}' not found: check the name or PATH")


def spawn(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    cpus: Sequence[int] | None = None,
    stdin_path: str | None = None,
    stdout_fd: int,
    stderr_fd: int,
) -> int:
    """posix_spawnp ``argv`` in its own process group (so a timeout can kill the whole tree)."""
    full_env: Mapping[str, str] = os.environ if not env else {**os.environ, **env}
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, stdin_path or os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_DUP2, stdout_fd, 1),
        (os.POSIX_SPAWN_DUP2, stderr_fd, 2),
    ]
    old_cpus = None
    old_cwd = None
    try:
        if cpus is not None:
            old_cpus = usable_cpus()  # this process's mask, put back once the child is spawned
            try:
                os.sched_setaffinity(0, cpus)
            except OSError as exc:
                old_cpus = None
                raise PerflabError(
                    f"cannot pin to CPUs {list(cpus)} ({exc.strerror}): "
                    "choose CPUs that are online and allowed (see perflab machine)"
                ) from None
        if cwd is not None:
            old_cwd = os.getcwd()
            try:
                os.chdir(cwd)
            except OSError as exc:
                old_cwd = None
                raise PerflabError(f"working directory '{cwd}' is unusable ({exc.strerror}): fix --cwd") from None
        try:
            return os.posix_spawnp(
                argv[0], list(argv), full_env,
                file_actions=actions, setpgroup=0, setsigdef=_SIGDEF,
            )
        except FileNotFoundError:
            if stdin_path and not os.path.exists(stdin_path):
                raise PerflabError(f"stdin file '{stdin_path}' not found: fix the path") from None
            raise PerflabError(f"command '{argv[0]}' not found: check the name or PATH") from None
        except PermissionError:
            raise PerflabError(f"command '{argv[0]}' is not executable: chmod +x it or fix the path") from None
        except OSError as exc:
            raise PerflabError(f"cannot start '{argv[0]}': {exc.strerror}") from None
    finally:
        if old_cwd is not None:
            os.chdir(old_cwd)
        if old_cpus is not None:
            os.sched_setaffinity(0, old_cpus)


def kill_group(pid: int) -> None:
    """SIGKILL the child's process group (it leads its own), ignoring an already-gone group."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
