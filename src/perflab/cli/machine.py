"""`perflab machine [tune|reset]`: this machine's topology and metadata; prepare it for benchmarking and undo it."""

from __future__ import annotations

import click

from perflab.cli.common import make_console
from perflab.cli.options import CpuList


@click.group(name="machine", invoke_without_command=True)
@click.option("--root", "root_dir", metavar="DIR", default=None,
              help="Read an unpacked /sys + /proc snapshot under DIR instead of this machine "
                   "(no live probes then; tune and reset write into it).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
@click.pass_context
def command(ctx: click.Context, root_dir: str | None, as_json: bool) -> None:
    """Show CPUs, cores, SMT, sockets, NUMA nodes and distances, caches, energy meters, metadata,
    and whether perflab has tuned this machine; 'tune' prepares it for benchmarking, 'reset' undoes that."""
    import os

    from perflab.errors import PerflabError
    from perflab.platform.sysfs import Root

    if root_dir is not None and not os.path.isdir(root_dir):
        raise PerflabError(f"--root {root_dir}: no such directory (give an unpacked sysfs snapshot)")
    ctx.obj = Root(root_dir or "/")
    if ctx.invoked_subcommand is None:
        _show(ctx.obj, as_json)


def _show(root, as_json: bool) -> None:
    import json

    from perflab.kernels import abi
    from perflab.measure.energy import describe_sources
    from perflab.platform.tune import state as tune_state
    from perflab.platform.show import machine_info, render

    info = machine_info(root, extra_probes=abi.PROBES, energy=describe_sources(root))
    info["tune"] = _tune_status(root)
    if as_json:
        click.echo(json.dumps(info, indent=2, sort_keys=False))
        return
    console = make_console()
    render(info, console)
    state = tune_state.load()
    if state and not tune_state.stale(state, root):
        console.print(tune_state.tuned_line(state), highlight=False, markup=False)
        for line in tune_state.tuned_lines(state, root):
            console.print(line, highlight=False, markup=False)
    else:
        console.print("tuning: not tuned by perflab ('perflab machine tune' prepares it)", highlight=False)


def _tune_status(root) -> dict:
    from perflab.platform.tune import state as tune_state

    state = tune_state.load()
    out = tune_state.machine_state(root)
    if state and not tune_state.stale(state, root):
        out["files"] = state.get("files", [])
        out["cpuset_record"] = state.get("cpuset")
        out["sessions"] = state.get("sessions", [])
    return out


def _only(_ctx, _param, value: str | None):
    if value is None:
        return None
    from perflab.platform.tune.knobs import KNOBS

    names = frozenset(v.strip() for v in value.split(",") if v.strip())
    unknown = sorted(names - set(KNOBS))
    if unknown or not names:
        raise click.BadParameter(f"{value!r}: knobs are {','.join(KNOBS)}")
    return names


@command.command(name="tune")
@click.option("--cpus", type=CpuList(check=False), metavar="LIST",
              help="Benchmark CPUs (default: the isolated CPUs, else every online CPU but the first).")
@click.option("--only", metavar="KNOB,...", callback=_only,
              help="Only these knobs: turbo,governor,min_freq,aslr,perf_rate,thp,smt,irq,cpuset,isolation.")
@click.option("--smt-off", is_flag=True, help="Take the SMT siblings of the benchmark CPUs offline.")
@click.option("--thp", type=click.Choice(["always", "madvise", "never"]), default=None,
              help="Set transparent huge pages (default: recorded, not changed).")
@click.option("--dry-run", is_flag=True, help="Say what would change; change nothing (no root needed).")
@click.pass_obj
def tune_command(root, cpus, only, smt_off, thp, dry_run) -> None:
    """Prepare this machine for benchmarking; per knob: what it was, what it sets, and why."""
    from perflab.platform.tune import state as tune_state
    from perflab.platform.tune.knobs import TuneOptions, default_cpus, tune

    opts = TuneOptions(cpus=tuple(cpus) if cpus else default_cpus(root), only=only, smt_off=smt_off,
                       thp=thp, dry_run=dry_run)
    lines = tune(root, opts)
    console = make_console(highlight=False, markup=False)
    for line in lines:
        console.print(f"{line.knob:<10} {line.status:<8} {line.text}")
        for extra in line.extra:
            console.print(f"{'':<10} {'':<8} {extra}")
    if not dry_run:
        console.print(f"state: {tune_state.state_path()} ('perflab machine reset' restores every value)")


@command.command(name="reset")
def reset_command() -> None:
    """Restore every value 'perflab machine tune' (or a study's --tune) changed, from its state file."""
    from perflab.errors import PerflabError
    from perflab.platform.tune.reset import reset

    report = reset()
    console = make_console(highlight=False, markup=False)
    if not report.tuned:
        console.print(report.note)
        return
    for line in report.lines:
        console.print(f"{line.knob:<10} {line.status:<8} {line.text}")
    if report.problems:
        for p in report.problems:
            console.print(f"not restored: {p}")
        raise PerflabError(f"{len(report.problems)} value(s) not restored (named above): the state file keeps "
                           "them; fix the cause and run 'perflab machine reset' again")
    console.print("reset: every value perflab changed is back")
