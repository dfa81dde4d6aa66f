"""Run many `perflab` command lines, each in its own forked process, from one interpreter.

A bad-input table of 260 command lines costs 260 interpreter starts and imports (~0.14 s each
here, ~40 s under load) when each is `python -m perflab`; forked from one process that has
imported perflab and its heavy libraries once, each is a real process with the real entry point
(perflab.cli.main: its exit status, its stderr) for a few milliseconds of fork.
Reads JSON {"cases": [[arg, ...], ...], "cwd": DIR, "env": {...}, "timeout": S} on stdin and
writes JSON [[exit status, stderr], ...] on stdout (exit status -1: no answer within S).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time


def _child(argv: list[str], cwd: str, env: dict, err_path: str) -> None:
    """In the forked child: the command line through perflab's own main; never returns."""
    code = 1
    try:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        null = os.open(os.devnull, os.O_RDWR)
        err = os.open(err_path, os.O_WRONLY | os.O_TRUNC)
        os.dup2(null, 0)
        os.dup2(null, 1)
        os.dup2(err, 2)
        from perflab.cli import main

        main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # a traceback is what the test looks for: print it as Python would
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


def _wait(pid: int, deadline: float) -> int:
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            if _own_group(pid):
                os.killpg(pid, signal.SIGKILL)  # and whatever the command started
            else:
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return -1
        time.sleep(0.002)


def _own_group(pid: int) -> bool:
    try:
        return os.getpgid(pid) == pid
    except ProcessLookupError:
        return False


def run_cases(cases: list[list[str]], cwd, env: dict | None = None, timeout: float = 90) -> list[tuple[int, str]]:
    """(exit status, stderr) of each command line, each forked from one interpreter running this
    file: for a test file's table of command lines that it checks only by those two."""
    import subprocess

    job = {"cases": cases, "cwd": str(cwd), "env": env or {}, "timeout": timeout}
    p = subprocess.run([sys.executable, __file__], input=json.dumps(job), capture_output=True, text=True,
                       timeout=timeout * len(cases) + 300)
    if p.returncode != 0:
        raise AssertionError(f"forkcli failed: {p.stderr[-2000:]}")
    return [(code, err) for code, err in json.loads(p.stdout)]


def main() -> None:
    job = json.load(sys.stdin)
    os.environ.update(job["env"])
    from perflab import startup

    startup.begin()
    import click

    from perflab.cli import cli

    ctx = click.Context(cli)
    for name in cli.list_commands(ctx):  # every subcommand's module, imported once before the forks
        cli.get_command(ctx, name)

    # scipy.special is what the statistics of these command lines import; all of scipy.stats
    # (0.4 s more) none of them reaches
    for heavy in ("numpy", "scipy.special", "sqlalchemy", "rich.console", "rich.table", "jinja2"):
        try:
            __import__(heavy)
        except ImportError:
            pass
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, argv in enumerate(job["cases"]):
            err_path = os.path.join(tmp, f"{i}.err")
            open(err_path, "w").close()
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                os.setpgid(0, 0)  # its own group: a timeout kills what it started too
                _child(argv, job["cwd"], {**os.environ, **job["env"]}, err_path)
            code = _wait(pid, time.monotonic() + job["timeout"])
            with open(err_path, errors="replace") as fh:
                out.append([code, fh.read() if code != -1 else f"HANG (no answer in {job['timeout']} s)"])
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
