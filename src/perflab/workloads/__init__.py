"""Workload names: the built-in ones (minihlt) and those defined in a perflab.toml.

``resolve`` turns ``--workload NAME`` or ``-- CMD ARGS`` into a typed ``Workload`` once, at the
edge. A perflab.toml looks like::

    [workload.sim]
    command = ["{binary}", "--events", "50"]   # or one string, split like a shell would
    metrics = ['(?m)^events/s: (?P<events_per_s>[\\d.]+)$']
    primary_metric = "events_per_s"
    higher_is_better = true
    unit = "events/s"                          # optional: how the metric is printed
    env = { OMP_NUM_THREADS = "1" }
    cwd = "run"                                # relative to the perflab.toml
    [workload.sim.build]
    sources = ["src/sim.cpp"]                  # relative to the perflab.toml
    cflags = ["-O2"]
    language = "c++"

Names in perflab.toml shadow built-in names.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from perflab.errors import PerflabError
from perflab.kernels import minihlt
from perflab.kernels.build import build
from perflab.model import Workload
from perflab.workloads.toml import TomlWorkload, load_config
from perflab.startup import which



@dataclass(frozen=True)
class WorkloadInfo:
    """One known workload name, without building anything."""

    name: str
    source: str  # "builtin" or the perflab.toml path
    description: str
    command: str


def _minihlt(**kw: Any) -> Workload:
    return minihlt.workload(**kw)


def _minihlt_quick(**kw: Any) -> Workload:
    return minihlt.quick_workload(**kw)


# name -> (factory, description, command shown by `perflab workload list`)
BUILTIN: dict[str, tuple[Callable[..., Workload], str, str]] = {
    "minihlt": (
        _minihlt,
        "reference event-processing job: 100 events, 120 MB static data, ~2-3 s",
        "minihlt --events 100 --static-mb 120",
    ),
    "minihlt-quick": (
        _minihlt_quick,
        "short minihlt run: 20 events, 32 MB static data, < 1 s",
        "minihlt --events 20 --static-mb 32",
    ),
}

# ---- resolution ------------------------------------------------------------------------------

def list_workloads(config_path: str | os.PathLike | None = None) -> list[WorkloadInfo]:
    """Built-in and perflab.toml workloads (the latter shadow the former), without building."""
    out: dict[str, WorkloadInfo] = {
        name: WorkloadInfo(name, "builtin", desc, cmd) for name, (_, desc, cmd) in BUILTIN.items()
    }
    for name, tw in load_config(config_path).items():
        shown = f"<{tw.build.output or name} built from {' '.join(tw.build.sources)}>" if tw.build else ""
        cmd = " ".join(shown if a == "{binary}" else shlex.quote(a) for a in tw.command)
        out[name] = WorkloadInfo(name, str(tw.path), tw.description, cmd)
    return list(out.values())


def build_toml_workload(tw: TomlWorkload, cflags: Sequence[str] | None = None):
    """Build a perflab.toml workload's recipe through the build cache; returns a BuildResult."""
    assert tw.build is not None
    base = tw.path.parent
    return build(
        [base / s for s in tw.build.sources],
        tw.build.output or tw.name,
        compiler=tw.compiler,
        cflags=tuple(cflags) if cflags is not None else tw.build.cflags,
        ldflags=tw.build.ldflags,
    )


def _from_toml(tw: TomlWorkload) -> Workload:
    argv = tw.command
    if tw.build is not None:
        exe = str(build_toml_workload(tw).path)
        argv = tuple(a.replace("{binary}", exe) for a in argv)
    if not tw.shell:
        check_executable(argv[0], cwd=tw.cwd)
    else:
        argv = (shlex.join(argv),) if len(argv) > 1 else argv
    return Workload(
        name=tw.name, argv=argv, metrics=tw.metrics, primary_metric=tw.primary_metric,
        higher_is_better=tw.higher_is_better, unit=tw.unit, shell=tw.shell, env=dict(tw.env), cwd=tw.cwd,
        build=tw.build, source=str(tw.path), fork_arg=tw.fork_arg, event_arg=tw.event_arg,
        checksum_metric=tw.checksum_metric, series=tw.series,
    )


def check_executable(exe: str, cwd: str | None = None) -> str:
    """The full path of ``exe`` (PATH lookup unless it has a slash), or a PerflabError."""
    if "/" in exe:
        p = Path(exe) if os.path.isabs(exe) or cwd is None else Path(cwd) / exe
        if not p.exists():
            raise PerflabError(f"command '{exe}' not found: no such file; check the path")
        if p.is_dir() or not (p.stat().st_mode & 0o111) or not os.access(p, os.X_OK):
            raise PerflabError(f"command '{exe}' is not executable: chmod +x it or give another program")
        return str(p)
    found = which(exe)
    if found is None:
        raise PerflabError(
            f"command '{exe}' not found: it is not on PATH; check the spelling, install it or give its full path"
        )
    return found


def known_names(config_path: str | os.PathLike | None = None) -> list[str]:
    return [w.name for w in list_workloads(config_path)]


def lookup(name: str, config_path: str | os.PathLike | None = None) -> TomlWorkload | None:
    """The perflab.toml entry for ``name``, None for a built-in; PerflabError when unknown."""
    toml = load_config(config_path)
    if name in toml:
        return toml[name]
    if name in BUILTIN:
        return None
    known = ", ".join(known_names(config_path))
    where = " (perflab workload list shows them)" if toml else " (or define it in perflab.toml as [workload.NAME])"
    raise PerflabError(f"unknown workload '{name}': known workloads are {known}{where}")


def resolve(
    name: str | None,
    command_args: Sequence[str] = (),
    shell: bool = False,
    config_path: str | os.PathLike | None = None,
) -> Workload:
    """``--workload NAME`` (built-in or perflab.toml) or ``-- CMD ARGS`` as a Workload.

    With both, the arguments after ``--`` are appended to the named workload's command, as a
    user running it by hand would add them (``-w minihlt -- --events 10``).
    """
    args = tuple(command_args)
    if args and args[0] == "--":
        args = args[1:]
    if name:
        tw = lookup(name, config_path)
        workload = BUILTIN[name][0]() if tw is None else _from_toml(tw)
        return with_args(workload, args) if args else workload
    if not args:
        raise PerflabError("nothing to run: give --workload NAME (e.g. minihlt) or -- CMD [ARGS...]")
    if shell:
        return Workload(name=" ".join(args), argv=(" ".join(args),), shell=True, source="command")
    check_executable(args[0])
    return Workload(name=" ".join(args), argv=args, source="command")


def with_args(workload: Workload, args: Sequence[str]) -> Workload:
    """The workload with extra arguments appended (quoted for a shell workload)."""
    if workload.shell:
        argv = (workload.argv[0] + " " + shlex.join(args),) + tuple(workload.argv[1:])
    else:
        argv = tuple(workload.argv) + tuple(args)
    return replace(workload, argv=argv, name=f"{workload.name} {display_args(args)}")


def display_args(args: Sequence[str]) -> str:
    """Arguments as a shell would take them, {placeholders} left unquoted so -L can fill them."""
    import re

    return " ".join(a if re.fullmatch(r"[\w@%+=:,./{}-]+", a) else shlex.quote(a) for a in args)
