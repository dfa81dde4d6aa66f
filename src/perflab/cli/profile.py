"""`perflab profile [options] (--workload NAME | -- CMD | --pid PID)` and `perflab profile diff A B`."""

from __future__ import annotations

import math
import os
import sys

import click

from perflab.cli.common import (
    emit_json, json_option, make_console, resolve_target, save_baseline, store_option, study_output_options,
    target_options,
)
from perflab.cli.options import DURATION, Count, Cpu, default_of, tune_options, tuned_study
from perflab.studies.profile.study import ProfileConfig
from perflab.errors import PerflabError

_DIFF = "perflab_profile_diff_args"


def _console():
    return make_console(highlight=False)


@click.command(name="diff")
@click.argument("a")
@click.argument("b")
@click.option("--threshold", default=1.0, show_default=True, metavar="PCT",
              help="Show contributors with at least PCT %% of the extra samples.")
@click.option("--top", default=15, show_default=True, type=Count(1, 10_000), help="At most this many rows.")
@click.option("--min-effect", "min_effect", default=0.0, show_default=True, metavar="PCT",
              help="callgrind: call a function changed only where its B/A interval lies beyond 1 +- PCT %%.")
@store_option
@json_option
def diff_command(a: str, b: str, threshold: float, top: int, min_effect: float, db_url: str | None,
                 json_path: str | None) -> None:
    """Functions behind the extra period of profile B over A (perf.data paths or campaign ids).

    Both must be recordings of the same perf event; the extra is in its unit (ms of cpu-clock,
    Mcycles of cycles). Symbols are demangled and clone suffixes (.constprop.N, .isra.N, .part.N,
    .lto_priv.N, .cold) folded, so rebuilds match. Campaigns recorded with --repeat 3 or more
    test each function's share (Welch, Holm); callgrind campaigns with --repeat 2 or more test
    each function's exclusive count.
    """
    from perflab.measure.window_perf import PerfWindowRecorder
    from perflab.report.terminal.profile import render_diff
    from perflab.store import open_store
    from perflab.studies.profile.diff import ProfileDiffConfig, diff, load_side

    if not 0 <= threshold <= 100:  # also refuses nan
        raise PerflabError(f"--threshold {threshold}: give a percentage from 0 to 100")
    if not 0 <= min_effect < 100:  # also refuses nan
        raise PerflabError(f"--min-effect {min_effect}: give a percentage from 0 to under 100, e.g. --min-effect 2")
    config = ProfileDiffConfig(a, b, threshold / 100.0, top, min_effect=min_effect / 100.0)
    recorder = PerfWindowRecorder()
    with open_store(db_url) as store:
        side_a, side_b = load_side(a, store, recorder), load_side(b, store, recorder)
        if min_effect and not (side_a.counts and side_b.counts):
            raise PerflabError("--min-effect applies to two callgrind campaigns (profile --instrument "
                               "callgrind): perf profiles are tested on shares, without a band")
        result = diff(config, side_a, side_b)
        with store.open_campaign("profile_diff", config.as_dict()) as camp:
            result.campaign_id = camp.id
            camp.summary = result.as_dict()
    render_diff(result, _console())
    if json_path:
        emit_json(json_path, result.as_dict(), "profile_diff")


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
@click.option("--pid", type=Count(1, 2**31 - 1), metavar="PID", help="Attach to this running process (markers from --log).")
@click.option("--children", is_flag=True,
              help="With --pid: also its descendants (running now, and those started later).")
@click.option("--start", metavar="REGEX", help="Open the window at the first output line matching REGEX.")
@click.option("--stop", metavar="REGEX", help="Close it at the next line matching REGEX.")
@click.option("--event", "event_n", type=Count(0, 2**62), metavar="N",
              help="Window = event N: 'start processing event #N' .. 'done processing event #N'.")
@click.option("--after", type=float, metavar="S", help="Time window: open S seconds after launch.")
@click.option("--duration", type=DURATION, metavar="S", help="Close the window S seconds after it opened.")
@click.option("--log", "log_file", metavar="FILE", help="Watch FILE (inotify) for the markers instead of the output.")
@click.option("--pipe", is_flag=True, help="Read the output through a pipe (with stdbuf -oL) instead of a pty.")
@click.option("--perf-event", "-e", "perf_event", metavar="EV",
              help="perf event (default: cycles where the PMU counts them, else cpu-clock).")
@click.option("--freq", "-F", default=default_of(ProfileConfig, "freq"), show_default=True, type=Count(1, 1_000_000),
              help="Sampling frequency (Hz).")
@click.option("--call-graph", metavar="MODE", help="Record call graphs: fp, dwarf or lbr.")
@click.option("--cpu", type=Cpu(), metavar="N", help="Pin the workload to CPU N (taskset).")
@click.option("--repeat", default=default_of(ProfileConfig, "repeat"), show_default=True, type=Count(1, 100_000), help="Record the window K times (profile diff tests with 3+ per side).")
@click.option("--threshold", default=100 * default_of(ProfileConfig, "threshold"), show_default=True, metavar="PCT",
              help="List functions with at least PCT %% of the samples.")
@click.option("--annotate", "annotate_top", default=default_of(ProfileConfig, "annotate_top"), show_default=True, metavar="N", type=Count(0, 1000),
              help="Annotate the top N functions instruction by instruction.")
@click.option("--out", "out_dir", default=default_of(ProfileConfig, "out_dir"), show_default=True,
              help="Where perf.data files are kept (one folder per campaign).")
@click.option("--timeout", type=DURATION, metavar="S",
              help="Kill the workload after S seconds (with --pid: stop recording).")
@click.option("--instrument", type=click.Choice(["perf", "callgrind"]), default=default_of(ProfileConfig, "instrument"), show_default=True,
              help="perf samples; callgrind counts instructions per function (Valgrind, no PMU needed).")
@click.option("--cache-sim", is_flag=True, help="With callgrind: simulate the caches too (about 2x slower).")
@click.option("--cache-model", metavar="'I1=S,W,L D1=S,W,L LL=S,W,L'",
              help="With --cache-sim: the caches to simulate (default: this machine's, from sysfs).")
@click.option("--tree", is_flag=True, help="Print the call tree top-down (needs --call-graph).")
@click.option("--prune", default=1.0, show_default=True, metavar="PCT",
              help="With --tree: leave out frames under PCT %% of the samples.")
@click.option("--export", "exports", type=(click.Choice(["folded", "speedscope", "csv"]), str), multiple=True,
              metavar="FORMAT FILE", help="Write folded stacks (FlameGraph, inferno), a speedscope file, or "
              "the flat table as CSV; repeatable.")
@study_output_options
@tune_options
def command(workload_name, config_path, shell, command_args, pid, children, start, stop, event_n,
            after, duration, log_file, pipe, perf_event, freq, call_graph, cpu, repeat, threshold,
            annotate_top, out_dir, timeout, instrument, cache_sim, cache_model, tree, prune, exports, db_url,
            json_path, tune, metric) -> None:
    """Profile a window of a run (one event), from the workload's output or a log file.

    perf record starts before the workload with its events disabled and is enabled through
    its control fifo when the start marker appears (acknowledged), disabled at the stop
    marker. --pid PID --log FILE does the same for a job already running. Without markers
    the window is the whole run. --instrument callgrind counts instructions per function
    instead, switching Valgrind's instrumentation on and off at the markers (vgdb). Also:
    `perflab profile diff A B`.
    """
    from perflab.measure.window import Window, perf_path
    from perflab.measure.window_perf import PerfWindowRecorder
    from perflab.report.terminal.profile import render
    from perflab.store import open_store
    from perflab.studies import run_study
    from perflab.studies.profile import study as profile
    from perflab.studies.profile.window import event_markers

    if event_n is not None:
        if start or stop:
            raise PerflabError("give --event N or --start/--stop, not both")
        start, stop = event_markers(event_n)
    if stop and not start:
        raise PerflabError("--stop needs --start (or use --after S for a time window)")
    if after is not None and start:
        raise PerflabError("--after is for time windows: drop it, or drop --start")
    if children and pid is None:
        raise PerflabError("--children goes with --pid: a launched workload's children are always followed")
    if after is not None and not (math.isfinite(after) and after >= 0):
        raise PerflabError(f"--after {after}: give a finite number of seconds >= 0")
    if not 0 <= threshold <= 100:  # also refuses nan
        raise PerflabError(f"--threshold {threshold}: give a percentage from 0 to 100")
    _check_stack_options(tree, prune, exports, call_graph, instrument)
    if pid is not None:
        if workload_name or command_args:
            raise PerflabError("give --pid PID or a workload to launch, not both")
        workload = None
    else:
        workload = resolve_target(workload_name, command_args, shell, config_path, metric=metric)
        workload = _with_frame_pointers(workload, workload_name, call_graph, config_path)
    config = profile.ProfileConfig(
        workload=workload, window=Window(start, stop, after, duration), event=perf_event,
        freq=freq, call_graph=call_graph, cpu=cpu, repeat=repeat, threshold=threshold / 100.0,
        # absolute: `perflab resume` may run from another directory
        annotate_top=annotate_top, log_file=os.path.abspath(log_file) if log_file else None,
        use_pty=not pipe, out_dir=os.path.abspath(out_dir),
        timeout=timeout, pid=pid, children=children, instrument=instrument,
        cache_model=_cache_model(instrument, cache_sim, cache_model),
    )
    profile.validate(config)  # before a store or campaign exists
    if instrument == "callgrind":
        from perflab.measure.callgrind import executable

        executable()
    else:
        perf_path()
    console = _console()
    if pid is not None and tune.on:
        raise PerflabError("--tune moves the runs perflab starts into the benchmark cpuset, and a --pid "
                           "process is not one of them: tune with 'perflab machine tune' and move it "
                           "yourself, or drop --tune")
    with tuned_study(tune, config, lambda text: console.print(text, highlight=False, markup=False)), \
            open_store(db_url) as store, PerfWindowRecorder() as recorder:
        result = run_study(profile, config, store, recorder,
                           progress=lambda m: console.print(m, style="dim"))
        display = store.display
        save_baseline(store, result.campaign_id)
    seen = any(w.get("start_marker_ns") is not None for w in result.recordings)
    if not result.opened and result.recordings and not result.failed and not seen:
        # Bad input, not a finding: the marker or the time window is not in this run. A marker
        # seen whose window perf opened too late is a finding (exit 1, said below), not bad input.
        raise PerflabError(_never_opened(config, len(result.recordings)))
    render(result, console)
    if tree:
        from perflab.report.terminal.flame import render_tree

        render_tree(result, console, prune / 100.0)
    if exports:
        from perflab.report.profile_export import export

        for fmt, path in exports:
            console.print(export(result, fmt, path), highlight=False)
    folders = sorted({os.path.dirname(p) for p in result.perf_data if p})
    kind = "callgrind.out: {} folder(s)" if instrument == "callgrind" else "perf.data: {} file(s)"
    console.print(f"{kind.format(len(result.perf_data))} in {', '.join(folders)}; "
                  f"campaign {result.campaign_id} in {display}")
    if instrument == "callgrind" and result.perf_data:
        # --annotate is perf's (sampled instructions); callgrind's own tool gives counts per line.
        import glob

        files = sorted(glob.glob(os.path.join(result.perf_data[0], "callgrind.out.*")))
        if files:
            console.print(f"counts per source line: callgrind_annotate --auto=yes {files[0]}")
    if json_path:
        emit_json(json_path, result.as_dict(), "profile")
    if not result.opened:
        sys.exit(1)


def _with_frame_pointers(workload, name: str | None, call_graph: str | None, config_path: str | None):
    """The built-in minihlt, built with frame pointers where --call-graph fp walks them: at -O2 gcc
    omits them and every stack breaks at the first caller ([unknown] instead of main). A workload
    of the user's own is left as built: its flags are the user's to choose."""
    import dataclasses

    from perflab.kernels.minihlt import build_minihlt
    from perflab.workloads import lookup

    if call_graph != "fp" or name not in ("minihlt", "minihlt-quick") or lookup(name, config_path) is not None:
        return workload
    flags = ("-O2", "-fno-omit-frame-pointer")
    exe = str(build_minihlt(flags).path)
    recipe = workload.build and dataclasses.replace(workload.build, cflags=("-std=c++17", *flags))
    return dataclasses.replace(workload, argv=(exe, *workload.argv[1:]), build=recipe)


def _check_stack_options(tree: bool, prune: float, exports, call_graph: str | None, instrument: str) -> None:
    """What needs call stacks asks for them, before anything is recorded."""
    if not 0 <= prune < 100:  # also refuses nan
        raise PerflabError(f"--prune {prune}: give a percentage from 0 to under 100, e.g. --prune 1")
    stacked = [f"--export {fmt}" for fmt, _ in exports if fmt != "csv"] + (["--tree"] if tree else [])
    if stacked and not call_graph and instrument != "callgrind":  # callgrind counts every call path
        raise PerflabError(f"{' and '.join(stacked)} need call stacks: add --call-graph fp (or dwarf, or lbr "
                           "where the CPU has it)")
    for fmt, path in exports:
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise PerflabError(f"--export {fmt} {path}: folder {folder} does not exist; give a path in an existing folder")


def _cache_model(instrument: str, cache_sim: bool, text: str | None) -> str:
    """The cache model's text for callgrind --cache-sim, '' for instructions only."""
    if instrument != "callgrind" and (cache_sim or text):
        raise PerflabError("--cache-sim and --cache-model go with --instrument callgrind")
    if text and not cache_sim:
        raise PerflabError("--cache-model names the caches --cache-sim simulates: add --cache-sim")
    if not cache_sim:
        return ""
    from perflab.platform.cache_model import resolve

    return resolve(text).text()


def _never_opened(config, n: int) -> str:
    """One line for a window that never opened in any recording: which marker, what to do."""
    w = config.window
    runs = f"{n} recording{'s' if n != 1 else ''}"
    src = f"log {config.log_file}" if config.log_file else "output"
    if w.start:
        return (f"--start /{w.start}/ matched no line of the {src} in {runs}, so the window never "
                "opened: check the pattern against the program's output (or give --event N / --after S)")
    if w.after is not None:
        return (f"the window never opened in {runs}: the run ended before --after {w.after:g} s; "
                "give a shorter --after")
    return f"the window never opened in {runs}: give --start REGEX, --event N or --after S"
