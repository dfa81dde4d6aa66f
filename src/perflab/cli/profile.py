"""`perflab profile [options] (--workload NAME | -- CMD)` and `perflab profile diff A B`."""

from __future__ import annotations

import sys

import click

from perflab.cli.common import json_option, resolve_target, store_option, target_options
from perflab.errors import PerflabError

_DIFF = "perflab_profile_diff_args"


def _write_json(path: str | None, data: dict) -> None:
    if not path:
        return
    import json

    text = json.dumps(data, indent=2, default=str)
    if path == "-":
        click.echo(text)
    else:
        with open(path, "w") as f:
            f.write(text + "\n")


def _console():
    from rich.console import Console

    import sys

    # Long C++ symbols: do not wrap at 80 columns when the output is not a terminal.
    return Console(highlight=False, width=None if sys.stdout.isatty() else 200)


@click.command(name="diff")
@click.argument("a")
@click.argument("b")
@click.option("--threshold", default=1.0, show_default=True, metavar="PCT",
              help="Show contributors with at least PCT %% of the extra samples.")
@click.option("--top", default=15, show_default=True, help="At most this many rows.")
@store_option
@json_option
def diff_command(a: str, b: str, threshold: float, top: int, db_url: str | None, json_path: str | None) -> None:
    """Functions behind the extra samples of profile B over A (perf.data paths or campaign ids).

    Symbols are demangled and clone suffixes (.constprop.N, .isra.N, .part.N, .lto_priv.N,
    .cold) folded, so rebuilds match. Campaigns recorded with --repeat K give a bootstrap CI.
    """
    from perflab.store import open_store
    from perflab.studies.profile import ProfileDiffConfig, run_profile_diff

    store = open_store(db_url)
    res = run_profile_diff(ProfileDiffConfig(a, b, threshold / 100.0, top), None, store, _console())
    _write_json(json_path, res.summary())


def _target(workload_name, command_args, shell, config_path):
    try:
        return resolve_target(workload_name, command_args, shell, config_path)
    except ModuleNotFoundError as exc:
        # perflab.workloads is optional for a plain `-- CMD`: the command is the workload.
        if exc.name != "perflab.workloads" or workload_name or not command_args:
            raise
        from pathlib import Path

        from perflab.model import Workload

        return Workload(name=Path(command_args[0]).name, argv=tuple(command_args), shell=shell)


class _ProfileCommand(click.Command):
    """`perflab profile ...` records; `perflab profile diff A B` dispatches to the diff command."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] == "diff":
            ctx.meta[_DIFF] = args[1:]
            return []
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context):
        if _DIFF in ctx.meta:
            return diff_command.main(args=ctx.meta[_DIFF], prog_name="perflab profile diff",
                                     standalone_mode=False)
        return super().invoke(ctx)


@click.command(name="profile", cls=_ProfileCommand)
@target_options
@click.option("--start", metavar="REGEX", help="Open the window at the first output line matching REGEX.")
@click.option("--stop", metavar="REGEX", help="Close it at the next line matching REGEX.")
@click.option("--event", "event_n", type=int, metavar="N",
              help="Window = event N: 'start processing event #N' .. 'done processing event #N'.")
@click.option("--after", type=float, metavar="S", help="Time window: open S seconds after launch.")
@click.option("--duration", type=float, metavar="S", help="Close the window S seconds after it opened.")
@click.option("--log", "log_file", metavar="FILE", help="Watch FILE (inotify) for the markers instead of the output.")
@click.option("--pipe", is_flag=True, help="Read the output through a pipe (with stdbuf -oL) instead of a pty.")
@click.option("--perf-event", "-e", "perf_event", metavar="EV",
              help="perf event (default: cycles with hardware counters, else cpu-clock).")
@click.option("--freq", "-F", default=4000, show_default=True, help="Sampling frequency (Hz).")
@click.option("--call-graph", metavar="MODE", help="Record call graphs: fp, dwarf or lbr.")
@click.option("--cpu", type=int, metavar="N", help="Pin the workload to CPU N (taskset).")
@click.option("--repeat", default=1, show_default=True, help="Record the window K times (for CIs in diff).")
@click.option("--threshold", default=1.0, show_default=True, metavar="PCT",
              help="List functions with at least PCT %% of the samples.")
@click.option("--annotate", "annotate_top", default=5, show_default=True, metavar="N",
              help="Annotate the top N functions instruction by instruction.")
@click.option("--out", "out_dir", default="perflab-out/profiles", show_default=True,
              help="Where perf.data files are kept (one folder per campaign).")
@click.option("--timeout", type=float, metavar="S", help="Kill the workload after S seconds.")
@store_option
@json_option
def command(workload_name, config_path, shell, command_args, start, stop, event_n, after, duration,
            log_file, pipe, perf_event, freq, call_graph, cpu, repeat, threshold, annotate_top,
            out_dir, timeout, db_url, json_path) -> None:
    """Profile a window of a run (one event), from the workload's own output.

    perf record starts before the workload with its events disabled and is enabled through
    its control fifo when the start marker appears (acknowledged), disabled at the stop
    marker. Also: `perflab profile diff A B`.
    """
    from perflab.studies.profile import ProfileConfig, run_profile
    from perflab.studies.profile_window import Window, compile_marker, event_markers

    if event_n is not None:
        if start or stop:
            raise PerflabError("give --event N or --start/--stop, not both")
        start, stop = event_markers(event_n)
    compile_marker(start, "--start")
    compile_marker(stop, "--stop")
    if stop and not start:
        raise PerflabError("--stop needs --start (or use --after S for a time window)")
    if after is not None and start:
        raise PerflabError("--after is for time windows: drop it, or drop --start")
    workload = _target(workload_name, command_args, shell, config_path)
    from perflab.store import open_store

    config = ProfileConfig(
        workload=workload, window=Window(start, stop, after, duration), event=perf_event,
        freq=freq, call_graph=call_graph, cpu=cpu, repeat=repeat, threshold=threshold / 100.0,
        annotate_top=annotate_top, log_file=log_file, use_pty=not pipe, out_dir=out_dir,
        timeout=timeout,
    )
    store = open_store(db_url)
    console = _console()
    res = run_profile(config, None, store, console)
    console.print(f"perf.data: {', '.join(res.perf_data)}; campaign {res.campaign_id} in {store.display}")
    _write_json(json_path, res.summary())
    if not res.opened:
        sys.exit(1)
