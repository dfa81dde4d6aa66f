"""Running a command with all of its output kept, and the isolation a bundle's runner can use.

The bundle study compares a workload's whole output inside and outside its bundle, so it needs
every byte of stdout (the executor keeps tails); rusage still comes from wait4 on that child.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from typing import Any

from perflab.errors import PerflabError
from perflab.model import RunResult
from perflab.startup import which


def run_captured(argv: list[str], cwd: str | None = None, env: dict | None = None,
                 timeout: float | None = None) -> tuple[RunResult, str, str]:
    """Run argv, keeping all of stdout (to compare outputs) and rusage from wait4."""
    full_env = None if env is None else {**os.environ, **env}
    try:
        p = subprocess.Popen(argv, cwd=cwd, env=full_env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as exc:
        raise PerflabError(f"cannot run {argv[0]}: {exc.strerror}; check the command") from None
    start = time.monotonic_ns()
    chunks: dict[str, bytes] = {}

    def drain(name: str, stream: Any) -> None:
        chunks[name] = stream.read()

    threads = [threading.Thread(target=drain, args=(n, s)) for n, s in (("out", p.stdout), ("err", p.stderr))]
    for t in threads:
        t.start()
    timed_out = False
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if deadline is not None and time.monotonic() > deadline:
            p.kill()
            timed_out = True
        time.sleep(0.002)
    end = time.monotonic_ns()
    p.returncode = 0  # reaped by wait4 above; keep Popen from waiting again
    for t in threads:
        t.join()
    out = chunks.get("out", b"").decode(errors="replace")
    err = chunks.get("err", b"").decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    result = RunResult(
        wall_ns=end - start, user_s=ru.ru_utime, sys_s=ru.ru_stime, maxrss_kb=ru.ru_maxrss,
        minflt=ru.ru_minflt, majflt=ru.ru_majflt, nvcsw=ru.ru_nvcsw, nivcsw=ru.ru_nivcsw,
        exit_code=code if code >= 0 else None, signal=-code if code < 0 else None, timed_out=timed_out,
        start_ns=start, end_ns=end,
        stdout_tail="\n".join(out.splitlines()[-5:]), stderr_tail="\n".join(err.splitlines()[-20:]),
    )
    return result, out, err


def isolation_available() -> str | None:
    """The isolation run.sh would pick on this machine."""
    if which("bwrap"):
        try:
            if subprocess.run(["bwrap", "--bind", "/", "/", "--unshare-all", "true"],
                              capture_output=True, timeout=20).returncode == 0:
                return "bwrap"
        except (OSError, subprocess.TimeoutExpired):
            pass
    if os.geteuid() == 0 and which("unshare"):
        return "unshare"
    if os.geteuid() == 0 and which("chroot"):
        return "chroot"
    return None
