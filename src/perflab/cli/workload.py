"""`perflab workload list|build|path`: the named workloads (built-in and perflab.toml)."""

from __future__ import annotations

import shlex
import time

import click

from perflab.cli.common import make_console

from perflab.errors import PerflabError

_config_option = click.option(
    "--config", "config_path", metavar="FILE", type=click.Path(dir_okay=False),
    help="perflab.toml with workload definitions (default: ./perflab.toml if present).",
)


@click.group(name="workload")
def command() -> None:
    """List, build and locate named workloads (built-in minihlt and perflab.toml ones)."""


@command.command(name="list")
@_config_option
def list_cmd(config_path: str | None) -> None:
    """List the workload names --workload accepts."""
    from perflab.report.terminal.workload import workloads_table
    from perflab.workloads import list_workloads

    make_console(width=200).print(workloads_table(list_workloads(config_path)))


def _build(name: str, cflags: str | None, config_path: str | None):
    """Build NAME (with CFLAGS replacing its default flags); returns a BuildResult or None."""
    from perflab.workloads import build_toml_workload, lookup

    flags = shlex.split(cflags) if cflags is not None else None
    tw = lookup(name, config_path)
    if tw is None:  # built-in
        from perflab.kernels import minihlt

        return minihlt.build_minihlt(tuple(flags) if flags is not None else ("-O2",))
    if tw.build is None:
        return None
    return build_toml_workload(tw, flags)


@command.command(name="build")
@click.argument("name")
@click.option("--cflags", metavar="FLAGS", help="Compiler flags replacing the default ones, e.g. '-O3 -march=native'.")
@_config_option
def build_cmd(name: str, cflags: str | None, config_path: str | None) -> None:
    """Build NAME through the build cache; print its path, cache key and build time."""
    t0 = time.perf_counter()
    res = _build(name, cflags, config_path)
    dt = time.perf_counter() - t0
    if res is None:
        raise PerflabError(f"workload '{name}' has no build recipe: add [workload.{name}.build] to perflab.toml")
    click.echo(f"path:    {res.path}")
    click.echo(f"key:     {res.key}")
    click.echo(f"cached:  {'yes' if res.cached else 'no'}")
    click.echo(f"time:    {dt:.2f} s")
    if res.command:
        click.echo(f"command: {shlex.join(res.command)}")


@command.command(name="path")
@click.argument("name")
@click.option("--cflags", metavar="FLAGS", help="Path of the build with these flags (built if needed).")
@_config_option
def path_cmd(name: str, cflags: str | None, config_path: str | None) -> None:
    """Print the executable of NAME (building it if needed)."""
    res = _build(name, cflags, config_path)
    if res is not None:
        click.echo(str(res.path))
        return
    from perflab.workloads import check_executable, lookup

    tw = lookup(name, config_path)
    assert tw is not None
    click.echo(tw.command[0] if tw.shell else check_executable(tw.command[0], cwd=tw.cwd))
