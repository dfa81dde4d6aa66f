"""`perflab run`: parse options into a RunConfig and call the run study."""

from __future__ import annotations

from typing import Any

import click

from perflab.cli.common import (energy_option, instrument_wrap, json_option, make_console, monitor_options, open_energy,
                                open_monitor, run_and_render, store_option, target_options)
from perflab.cli.gate_common import GATE_EXITS_HELP, RunGate, run_gate_options
from perflab.cli.options import DURATION, Count, MetricChoice, OutputPath, tune_options, default_of, percent_default
from perflab.studies.run.study import RunConfig
from perflab.errors import PerflabError


class _RunCommand(click.Command):
    """Remembers how many trailing arguments followed ``--`` (one command's argv)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["perflab.run.tail"] = len(args) - args.index("--") - 1 if "--" in args else None
        return super().parse_args(ctx, args)


def _display(argv: tuple[str, ...]) -> str:
    """Shell-like display of an argv that leaves {param} placeholders unquoted."""
    import re
    import shlex

    return " ".join(a if re.fullmatch(r"[\w@%+=:,./{}-]+", a) else shlex.quote(a) for a in argv)


def _percent(text: str | None, option: str = "--precision") -> float | None:
    if text is None:
        return None
    t = text.strip()
    try:
        value = float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise PerflabError(f"{option} '{text}' is not a number: write it like 1% or 0.01") from None
    if not 0 < value < 1:
        hint = f" (a bare number is a fraction: {t}% is {value / 100:g})" if not t.endswith("%") and 1 <= value < 100 else ""
        raise PerflabError(f"{option} {text} is out of range: give a fraction between 0 and 1, or a "
                           f"percentage like 1%{hint}")
    return value


def _scan_values(lo: str, hi: str, step: str | None) -> tuple[str, ...]:
    import math

    try:
        nums = [float(lo), float(hi), float(step) if step else 1.0]
    except ValueError:
        raise PerflabError(f"--parameter-scan bounds '{lo} {hi}' must be numbers") from None
    a, b, s = nums
    bad = next((t for t, x in zip((lo, hi, step), nums) if not math.isfinite(x)), None)
    if bad is not None:
        # inf would scan forever and nan compares false with everything: neither is a bound.
        raise PerflabError(f"--parameter-scan: {bad!r} is not a finite number: give numeric bounds "
                           "and step, e.g. -P n 1 8 -D 1")
    if s <= 0 or b < a:
        raise PerflabError("--parameter-scan needs MIN <= MAX and a positive --parameter-step-size")
    integral = all(float(x).is_integer() for x in nums)
    out, i = [], 0
    while a + i * s <= b + 1e-9 * max(1.0, abs(b)):
        v = a + i * s
        out.append(str(int(round(v))) if integral else f"{v:g}")
        i += 1
    return tuple(out)


@click.command(cls=_RunCommand, context_settings={"ignore_unknown_options": True},
               short_help="Time one or more commands, hyperfine-style.", epilog=GATE_EXITS_HELP)
@target_options
@click.option("--warmup", default=default_of(RunConfig, "warmup"), show_default=True, type=Count(0),
              help="Untimed runs of each command first.")
@click.option("--runs", "-r", type=Count(1), help="Exactly N timed runs per command.")
@click.option("--precision", metavar="P%",
              help="Adaptive: run until the 95% CI of the median is within +-P of it.")
@click.option("--until-decided", is_flag=True,
              help="Run rounds until each command is shown to differ from the reference by "
                   "--min-effect or more, or shown not to (5% over all looks), or --max-runs "
                   "(default 300) / --max-time runs out; with --baseline, until the gate's "
                   "thresholds are decided against the baseline (exit 0, 1 or 3).")
@click.option("--min-effect", default=percent_default(RunConfig, "min_effect"), show_default=True, metavar="PCT",
              help="The smallest difference called, and the margin --until-decided rules out.")
@click.option("--min-runs", "-m", default=default_of(RunConfig, "min_runs"), show_default=True, type=Count(2),
              help="Fewest runs per command without --runs.")
@click.option("--max-runs", "-M", type=Count(1), help="Most runs per command without --runs.")
@click.option("--max-time", type=DURATION,
              help="Stop the measured phase after S seconds (at least 2 runs each).")
@click.option("--seed", default=default_of(RunConfig, "seed"), show_default=True, type=int,
              help="Seed of the per-round shuffle and the bootstrap.")
@click.option("--parameter-list", "-L", "param_lists", nargs=2, multiple=True,
              metavar="NAME A,B,C", help="Substitute {NAME} in the commands by each value.")
@click.option("--parameter-scan", "-P", "param_scan", nargs=3, multiple=False, default=None,
              metavar="NAME MIN MAX", help="Substitute {NAME} by MIN..MAX.")
@click.option("--parameter-step-size", "-D", "step", metavar="STEP", help="Step of --parameter-scan.")
@click.option("--metric", "metric_regexes", multiple=True, metavar="REGEX",
              help="Named-group regex on the output, e.g. '(?P<events_per_s>[0-9.]+) events/s'.")
@click.option("--cpus", metavar="LIST", help="Pin the commands to these CPUs (e.g. 0 or 0,2-3).")
@click.option("--perf-stat", is_flag=True, help="Collect perf stat counters per run.")
@click.option("--instrument", type=click.Choice(["time", "cachegrind"]), default="time", show_default=True,
              help="cachegrind: also count instructions, simulated cache misses and branch "
                   "mispredictions under Valgrind (deterministic; 20-100x slower for a real workload, "
                   "hundreds of times for a program of a few ms, whose time is mostly Valgrind's "
                   "start-up; the slowdown is printed).")
@click.option("--cache-model", metavar="'I1=S,W,L D1=S,W,L LL=S,W,L'",
              help="Caches cachegrind simulates (bytes, ways, line bytes); default: this machine's.")
@click.option("--timeout", type=DURATION,
              help="Kill a run after S seconds.")
@click.option("--ignore-failure", "-i", is_flag=True, help="Keep going when a command fails.")
@click.option("--prepare", "-p", metavar="CMD", help="Shell command run before every timed run.")
@click.option("--export-json", type=OutputPath(), help="hyperfine-schema JSON.")
@click.option("--export-csv", type=OutputPath(), help="hyperfine-style CSV.")
@click.option("--export-markdown", type=OutputPath(), help="hyperfine-style Markdown table.")
@click.option("--command-name", "-n", "names", multiple=True, metavar="NAME",
              help="Display name of each command, in order.")
@click.option("--reference", metavar="NAME",
              help="Compare the others with this command (its display name; default: the first).")
@energy_option
@monitor_options(default=False)
@tune_options
@run_gate_options
@store_option
@json_option
@click.pass_context
def command(ctx, command_args, shell, workload_name, config_path, warmup, runs, precision,
            until_decided, min_effect, min_runs, max_runs, max_time, seed, param_lists, param_scan, step, metric_regexes,
            cpus, perf_stat, instrument, cache_model, timeout, ignore_failure, prepare, export_json, export_csv,
            export_markdown, names, reference, energy_source, monitor, monitor_interval, idle_s, db_url, json_path,
            tune, metric, **gate_options):
    """Time CMD (after --) or several quoted commands, hyperfine-style.

    \b
    perflab run --runs 30 -- sleep 0.01
    perflab run 'gzip -1 -k -f big' 'gzip -9 -k -f big'
    perflab run -L n 1,2,4 -- ./work --threads {n}
    perflab run --runs 20 --baseline main --fail-if 'median>+3%' -- ./trigger
    """
    import shlex

    gate = RunGate(**gate_options)

    from perflab.measure.metrics import compile_patterns
    from perflab.studies.run.study import Command, RunConfig

    tail = ctx.meta.get("perflab.run.tail")
    args = tuple(command_args)
    commands: list[Command] = []
    if tail:
        positional, argv = args[: len(args) - tail], args[len(args) - tail:]
    else:
        positional, argv = args, ()
    for text in positional:
        if shell:
            commands.append(Command(text, (text,), shell=True))
        else:
            try:
                parts = tuple(shlex.split(text))
            except ValueError as exc:
                raise PerflabError(f"cannot split command {text!r} ({exc}): fix the quoting") from None
            if not parts:
                raise PerflabError("an empty command was given: remove it")
            commands.append(Command(text, parts))
    if argv and not workload_name:
        name = " ".join(argv) if shell else _display(argv)
        commands.append(Command(name, (" ".join(argv),) if shell else argv, shell=shell))

    metrics = compile_patterns(metric_regexes)
    primary = None
    direction = None
    wl_env: tuple[tuple[str, str], ...] = ()
    wl_cwd = None
    series: tuple = ()
    skip_events = None
    if workload_name:
        if commands:
            raise PerflabError("give either --workload NAME or quoted commands, not both")
        from perflab.cli.common import resolve_target

        # Arguments after -- belong to the named workload (resolve_target appends them).
        wl = resolve_target(workload_name, tuple(argv), shell, config_path, extra_metrics=metrics, metric=metric)
        # wl.name already reads "NAME ARGS" (workloads.with_args): the arguments once.
        commands.append(Command(wl.name, tuple(wl.argv), shell=wl.shell))
        metrics = tuple(wl.metrics) + metrics
        primary = wl.primary_metric
        direction = wl.higher_is_better if primary else None
        wl_env, wl_cwd = tuple(dict(wl.env).items()), wl.cwd
        series, skip_events = tuple(wl.series), wl.skip_events
    if not workload_name:
        primary, direction, series, skip_events = _metric_choice(metrics, metric)
    if names:
        if len(names) > len(commands):
            raise PerflabError(f"{len(names)} --command-name for {len(commands)} commands: give one per command")
        commands = [Command(n, c.argv, c.shell) for n, c in zip(names, commands)] + commands[len(names):]

    parameters: list[tuple[str, tuple[str, ...]]] = []
    for pname, values in param_lists:
        vals = tuple(v for v in values.split(","))
        if not vals or any(v == "" for v in vals):
            raise PerflabError(f"--parameter-list {pname} '{values}' has an empty value: write a,b,c")
        parameters.append((pname, vals))
    if param_scan:
        parameters.append((param_scan[0], _scan_values(param_scan[1], param_scan[2], step)))
    elif step:
        raise PerflabError("--parameter-step-size needs --parameter-scan")
    if runs is not None and precision is not None:
        raise PerflabError("give either --runs N or --precision P%, not both")
    if until_decided and (runs is not None or precision is not None):
        raise PerflabError(f"--until-decided chooses the runs itself: drop "
                           f"{'--runs' if runs is not None else '--precision'} (bound it with --max-runs or --max-time)")
    if runs is not None:
        given = [f"--{o.replace('_', '-')}" for o in ("min_runs", "max_runs")
                 if ctx.get_parameter_source(o) is not click.core.ParameterSource.DEFAULT]
        if given:
            raise PerflabError(f"--runs {runs} fixes the number of runs: drop {' and '.join(given)}")
    if max_runs is not None and max_runs < min_runs and runs is None:
        # hyperfine's rule: an explicit contradiction is an error; the default minimum yields.
        if ctx.get_parameter_source("min_runs") is not click.core.ParameterSource.DEFAULT:
            raise PerflabError(f"--min-runs {min_runs} is more than --max-runs {max_runs}: "
                               "give --min-runs <= --max-runs")
        min_runs = max_runs

    cpu_tuple = None
    if cpus is not None:
        from perflab.measure.executor import check_cpus

        cpu_tuple = check_cpus(cpus)

    model = _cache_model(instrument, cache_model, perf_stat)
    if perf_stat:
        from perflab.platform.probes import perf_status

        perf = perf_status()  # missing or not permitted: said here, not as the command's failure
        if not perf.available:
            raise PerflabError(f"--perf-stat: {perf.reason}; or drop --perf-stat")
    config = RunConfig(
        commands=tuple(commands), metrics=metrics, primary_metric=primary,
        higher_is_better=direction, warmup=warmup,
        runs=runs, precision=_percent(precision), min_runs=min_runs, max_runs=max_runs,
        max_time=max_time, seed=seed, parameters=tuple(parameters), cpus=cpu_tuple,
        until_decided=until_decided, min_effect=_percent(min_effect, "--min-effect"),  # type: ignore[arg-type]  # it has a default
        perf_stat=perf_stat, timeout=timeout, ignore_failure=ignore_failure, prepare=prepare,
        workload=workload_name, env=wl_env, cwd=wl_cwd, reference=reference,
        instrument="" if model is None else instrument, cache_model=model.text() if model else "",
        series=series, skip_events=skip_events,
    )

    from perflab.studies.run import study as run_study_module

    if not config.commands:
        raise PerflabError("nothing to run: give -- CMD [ARGS...], quoted commands, or --workload NAME")
    from perflab.measure.spawn import check_command

    specs = run_study_module.plan(config)
    for spec in specs:
        check_command(spec.argv, spec.shell)
    if until_decided and len(specs) < 2 and not gate.baseline:
        raise PerflabError("--until-decided compares commands: give two or more (the first is the "
                           "reference), gate one against a baseline (--baseline NAME), or drop --until-decided")
    if reference is not None and reference not in {s.label for s in specs}:
        raise PerflabError(f"--reference {reference!r} names no command: give one of "
                           + ", ".join(repr(s.label) for s in specs))
    console = make_console(stderr=json_path == "-" or "-" in (export_json, export_csv, export_markdown))
    from perflab.report.terminal.run import render

    meter = open_energy(energy_source, console)
    watch = open_monitor(monitor, monitor_interval, idle_s, console)
    run_and_render(run_study_module, config, console, render, db_url, json_path, wrap=instrument_wrap(model, console),
                   tune=tune, fast=True, bar=True, gate=gate, results_line="perflab: results in {store}, campaign {campaign}",
                   finish=lambda result: _export(result, export_json, export_csv, export_markdown),
                   machine=_Pending(), energy=meter, monitor=watch)


def _export(result: Any, json_file: str | None, csv_file: str | None, markdown_file: str | None) -> None:
    """The hyperfine-style files asked for (--export-json, --export-csv, --export-markdown)."""
    if not (json_file or csv_file or markdown_file):
        return
    from perflab.report import export  # the writers (csv among them) only when asked for

    for path, write in ((json_file, export.export_json), (csv_file, export.export_csv),
                        (markdown_file, export.export_markdown)):
        if path:
            write(result, path)


def _cache_model(instrument: str, text: str | None, perf_stat: bool):
    """The cache model cachegrind simulates (None for time alone); Valgrind must be installed."""
    if instrument != "cachegrind":
        if text:
            raise PerflabError("--cache-model is for --instrument cachegrind: add it or drop --cache-model")
        return None
    if perf_stat:
        raise PerflabError("--perf-stat would count Valgrind, not the command: drop it with --instrument cachegrind")
    from perflab.measure.cachegrind import valgrind
    from perflab.platform.cache_model import resolve

    valgrind()
    return resolve(text)


def _metric_choice(metrics: tuple, choice: MetricChoice) -> tuple[str | None, bool | None, tuple, int | None]:
    """--primary-metric and its direction, --series and --skip-events for commands given on the
    line (a named workload takes them in resolve_target): the name must be a group of a --metric
    regex, or a series metric where --series is given."""
    if choice == MetricChoice():
        return None, None, (), None  # nothing chosen: no workload record to build (~1.2 ms of start-up)
    from perflab.model.workload import Workload

    wl = choice.apply(Workload("the commands", ("true",)), metrics)
    return (wl.primary_metric, (wl.higher_is_better if wl.primary_metric else None), tuple(wl.series),
            wl.skip_events)


class _Pending:
    """The machine capture running on a thread; result() waits for it (or re-raises its error)."""

    def __init__(self) -> None:
        import threading

        from perflab.platform.hostcache import capture_cached
        from perflab.studies import with_abi_probes

        self._done = threading.Event()
        self._value: object = None
        self._error: BaseException | None = None

        def work() -> None:
            try:
                self._value = capture_cached(extend=with_abi_probes)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting study
                self._error = exc
            finally:
                self._done.set()

        # A daemon: Ctrl-C must not wait for a compiler's --version to finish.
        threading.Thread(target=work, name="perflab-capture", daemon=True).start()

    def result(self) -> object:
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value
