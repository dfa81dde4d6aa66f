"""`perflab machine`: this machine's (or a sysfs snapshot's) topology and metadata."""

from __future__ import annotations

import click

from perflab.cli.common import make_console


@click.command(name="machine")
@click.option("--root", "root_dir", metavar="DIR", default=None,
              help="Read an unpacked /sys + /proc snapshot under DIR instead of this machine "
                   "(no live probes then).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
def command(root_dir: str | None, as_json: bool) -> None:
    """Show CPUs, cores, SMT, sockets, NUMA nodes and distances, caches, energy meters, and metadata."""
    import json
    import os

    from perflab.errors import PerflabError
    from perflab.kernels import abi
    from perflab.measure.energy import describe_sources
    from perflab.platform.show import machine_info, render
    from perflab.platform.sysfs import Root

    if root_dir is not None and not os.path.isdir(root_dir):
        raise PerflabError(f"--root {root_dir}: no such directory (give an unpacked sysfs snapshot)")
    root = Root(root_dir or "/")
    info = machine_info(root, extra_probes=abi.PROBES, energy=describe_sources(root))
    if as_json:
        click.echo(json.dumps(info, indent=2, sort_keys=False))
    else:
        render(info, make_console())
