"""`perflab footprint (--workload NAME | -- CMD)`: the files a workload really uses."""

from __future__ import annotations

import click

from perflab.cli.common import emit_json, json_option, make_console, resolve_target, store_option, target_options
from perflab.cli.options import DURATION, Cpu, OutputPath, default_of
from perflab.errors import PerflabError
from perflab.studies.footprint.study import FootprintConfig


@click.command(name="footprint", context_settings={"ignore_unknown_options": True})
@target_options
@click.option("--cpu", type=Cpu(), metavar="N", help="CPU that strace and the workload share (default: the last allowed).")
@click.option("--no-seccomp", is_flag=True, help="Do not use strace --seccomp-bpf.")
@click.option("--reps", type=click.IntRange(1, 50), default=default_of(FootprintConfig, "reps"), show_default=True,
              help="Traced and untraced runs each, interleaved, for the overhead ratio.")
@click.option("--trace", "keep_trace", metavar="FILE", type=OutputPath(dash=False),
              help="Keep strace's raw output in FILE (recorded as an artifact).")
@click.option("--all", "show_all", is_flag=True, help="List directories and /proc, /sys, /dev paths too.")
@click.option("--timeout", type=DURATION, default=default_of(FootprintConfig, "timeout"), show_default=True,
              help="Seconds per run.")
@store_option
@json_option
def command(workload_name, command_args, shell, config_path, cpu, no_seccomp, reps, keep_trace,
            show_all, timeout, db_url, json_path, metric) -> None:
    """List every file the workload opened, stat-ed, executed or read as a link (strace -f)."""

    from perflab.measure.executor import default_executor
    from perflab.store import open_store
    from perflab.report.terminal.footprint import render
    from perflab.studies import run_study
    from perflab.studies.footprint import study

    from perflab.platform import strace

    workload = resolve_target(workload_name, command_args, shell, config_path, metric=metric)
    if strace.strace_path() is None:  # before anything is said or opened: one line, not three
        raise PerflabError("strace is not installed: apt-get install strace (or run make lab)")
    config = FootprintConfig(workload=workload, cpu=cpu, seccomp=not no_seccomp, reps=reps,
                             timeout=timeout, keep_trace=keep_trace)
    console = make_console(highlight=False, stderr=json_path == "-")
    with open_store(db_url) as store, default_executor() as executor:
        console.print(f"results store: {store.display}")
        result = run_study(study, config, store, executor, progress=console.print)
    render(result, console, show_all=show_all)
    if json_path:
        emit_json(json_path, result.as_dict(), "footprint")
