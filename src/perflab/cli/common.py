"""Options and conversions every study command shares: target workload, store, JSON output.

This is the CLI edge: it turns click values into typed config (Workload, Store) once.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, Callable

import click

from perflab.cli.options import Duration, MetricChoice, OutputPath, Tune, primary_metric_options
from perflab.errors import PerflabError

# Columns of output that is not a terminal (a log, `| less`, a CI page, a mail): tables fold their
# cells to fit it rather than run to 250 columns that every viewer wraps mid-border.
PIPE_WIDTH = 100


def target_options(f: Callable) -> Callable:
    """``--workload NAME [-- ARGS]`` or ``-- CMD ARGS...`` (``--shell``: CMD through sh -c).

    Arguments after ``--`` with a named workload are appended to its command. With them come
    ``--primary-metric NAME``, ``--higher-is-better`` / ``--lower-is-better``, ``--series`` and
    ``--skip-events``: one ``metric`` argument (a MetricChoice) that ``resolve_target`` applies.
    """
    f = click.argument("command_args", nargs=-1, type=click.UNPROCESSED)(f)
    f = primary_metric_options(f)
    f = click.option("--shell", is_flag=True, help="Run CMD through /bin/sh -c.")(f)
    f = click.option(
        "--workload", "-w", "workload_name", metavar="NAME",
        help="A built-in workload (minihlt) or one defined in perflab.toml.",
    )(f)
    f = click.option(
        "--config", "config_path", metavar="FILE", type=click.Path(dir_okay=False),
        help="perflab.toml with workload definitions (default: ./perflab.toml if present).",
    )(f)
    return f


def store_option(f: Callable) -> Callable:
    return click.option(
        "--db", "db_url", metavar="URL", envvar="PERFLAB_DB",
        help="Results store: a SQLite path or sqlite:///, postgresql://... URL "
        "(default: perflab.db in the working directory).",
    )(f)


def json_option(f: Callable) -> Callable:
    return click.option(
        "--json", "json_path", metavar="PATH", type=OutputPath(),
        help="Also write the study's result as JSON to PATH ('-' for stdout).",
    )(f)


def resolve_target(
    workload_name: str | None,
    command_args: tuple[str, ...],
    shell: bool = False,
    config_path: str | None = None,
    extra_metrics: tuple = (),
    *,
    metric: MetricChoice,
):
    """Turn --workload NAME [-- ARGS] / -- CMD into a Workload, or raise a one-line PerflabError.

    ``metric``, the command's --primary-metric / --higher-is-better / --lower-is-better, --series and
    --skip-events (metric_options.primary_metric_options), override the workload's;
    ``extra_metrics`` are the command's own --metric patterns, which --primary-metric may name too.
    """
    from perflab.workloads import resolve

    if not workload_name and not command_args:
        raise PerflabError("nothing to run: give --workload NAME (e.g. minihlt) or -- CMD [ARGS...]")
    workload = resolve(workload_name, command_args, shell=shell, config_path=config_path)
    return metric.apply(workload, extra_metrics)


def emit_json(path: str, data: dict, study: str | None) -> None:
    """A result as JSON at PATH ('-': stdout); NaN becomes null; an unwritable path is one line.
    A study's result goes in its versioned envelope (store/envelope.py: perflab's version, the
    results' schema, the study); ``study`` None writes ``data`` as it is (no study's result)."""
    import json

    from perflab.store import dumps, envelope

    text = json.dumps(json.loads(dumps(data if study is None else envelope.wrap(study, data))), indent=2) + "\n"
    if path == "-":
        click.echo(text, nl=False)
        return
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise PerflabError(
            f"cannot write JSON to {path}: {exc.strerror}; the results are in the store "
            "(export them again with --json to another path)"
        ) from None


def make_console(stderr: bool = False, **kwargs: Any) -> Any:
    """A rich Console; piped or redirected, a PipeConsole that wraps to PIPE_WIDTH and never cuts.

    There rich would take 80 columns (or an inherited $COLUMNS) and ellipsise table cells: the
    width is $COLUMNS when set, else PIPE_WIDTH, and every line is wrapped or folded to fit it.
    """
    from rich.console import Console

    # emoji=False: a command named like `:x:` is printed as written (and rich's emoji table,
    # ~2 ms of start-up, is never loaded).
    kwargs.setdefault("emoji", False)
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty() or kwargs.get("force_terminal"):
        return Console(stderr=stderr, **kwargs)
    kwargs.setdefault("width", pipe_width())
    return _pipe_console_class()(stderr=stderr, **kwargs)


def pipe_width() -> int:
    """Columns of output that is not a terminal: $COLUMNS when it is a positive number, else PIPE_WIDTH."""
    try:
        width = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        width = 0
    return width if width > 0 else PIPE_WIDTH


_PIPE_CONSOLE: Any = None


def _pipe_console_class() -> Any:
    """PipeConsole, defined on first use: rich is imported lazily (perflab --help starts without it)."""
    global _PIPE_CONSOLE
    if _PIPE_CONSOLE is not None:
        return _PIPE_CONSOLE
    from rich.console import Console

    class PipeConsole(Console):
        """A Console for files and pipes: every line fits the width, and no cell or word is cut.

        Renderers choose ``no_wrap``, ``soft_wrap`` and column overflows for a terminal, where a
        cut cell can be widened by resizing; in a file the cut digits are lost. So print wraps
        plain text at the width, folds words longer than it, and gives every table (nested ones
        too) folding columns on a copy, leaving the caller's table as it was.
        """

        def print(self, *objects: Any, **kwargs: Any) -> None:
            kwargs["soft_wrap"] = False
            kwargs["no_wrap"] = False
            kwargs["crop"] = True
            if kwargs.get("overflow") in (None, "ellipsis", "crop", "ignore"):
                kwargs["overflow"] = "fold"
            super().print(*(_folding(o) for o in objects), **kwargs)

    _PIPE_CONSOLE = PipeConsole
    return PipeConsole


def _folding(renderable: Any) -> Any:
    """``renderable`` with every rich Table in it (cells, panels, groups) folding instead of cutting."""
    import copy
    from dataclasses import replace

    from rich.table import Table

    if isinstance(renderable, Table):
        table = copy.copy(renderable)
        table.columns = [replace(c, overflow="fold", no_wrap=False,
                                 _cells=[_folding(cell) for cell in c._cells])
                         for c in renderable.columns]
        return table
    inner = getattr(renderable, "renderable", None)  # Panel, Padding, Align
    if inner is not None and not isinstance(renderable, str):
        out = copy.copy(renderable)
        out.renderable = _folding(inner)
        return out
    if type(renderable).__name__ == "Group":
        from rich.console import Group

        return Group(*(_folding(r) for r in renderable.renderables), fit=renderable.fit)
    return renderable


def energy_option(f: Callable) -> Callable:
    """``--energy auto|rapl|perf|ipmi|off``: the meter read around every run (docs/energy.md)."""
    return click.option(
        "--energy", "energy_source", type=click.Choice(["auto", "rapl", "perf", "ipmi", "off"]),
        default="auto", show_default=True,
        help="Energy source read around every run: RAPL, perf's power events, the node's BMC "
        "(ipmitool), or off. auto: RAPL or perf where they count; says why there is none when given.",
    )(f)


def open_energy(source: str, console: Any) -> Any:
    """The chosen energy meter (or None); its one-line note printed where energy is measured or
    --energy was given. A machine without a source and a command that did not ask stay silent:
    the note would stand before every table and every one-line error on a laptop or a VM."""
    from perflab.measure.energy import choose_meter

    meter, note = choose_meter(source)
    if source != "off" and (meter is not None or _energy_asked()):
        console.print(note, highlight=False)
    return meter


class IdleDuration(Duration):
    """A duration, or 0 (none): the monitor's idle phases."""

    def convert(self, value, param, ctx):
        if re.fullmatch(r"\s*0+(\.0*)?\s*(s|ms|m|h)?\s*", str(value)):
            return 0.0
        return super().convert(value, param, ctx)


def monitor_options(default: bool) -> Callable[[Callable], Callable]:
    """``--monitor/--no-monitor``, ``--monitor-interval S``, ``--idle S``: the machine sampled beside
    the study (docs/energy.md); on by default where ``default``."""
    def deco(f: Callable) -> Callable:
        f = click.option("--idle", "idle_s", type=IdleDuration(3600.0), default=0.0, metavar="S",
                         help="With the monitor: sample the quiet machine S seconds before and after the "
                              "study, for energy net of idle power (e.g. 20s; default none).")(f)
        f = click.option("--monitor-interval", type=Duration(3600.0), default=1.0, show_default=True, metavar="S",
                         help="The monitor's sampling interval.")(f)
        return click.option("--monitor/--no-monitor", "monitor", default=default, show_default=True,
                            help="Sample frequency, load, memory, swap, pressure, steal and power beside "
                                 "the study, stored with its campaign.")(f)
    return deco


def open_monitor(enabled: bool, interval_s: float, idle_s: float, console: Any) -> Any:
    """The machine monitor (or None when off), its one line said: what it samples, what is missing."""
    if not enabled:
        if idle_s:
            raise PerflabError("--idle is the monitor's idle phases: add --monitor, or drop --idle")
        return None
    from perflab.measure.monitor import Monitor

    monitor = Monitor(interval_s, idle_s)
    console.print(monitor.note(), highlight=False, markup=False)
    return monitor


def render_monitor(store: Any, campaign_id: int | None, workload: Any, console: Any,
                   sources_said: bool = True) -> Any:
    """The monitor result of a campaign, rendered (None when it was not monitored);
    ``sources_said``: open_monitor's line named the missing sources before the study."""
    from perflab.report.terminal.monitor import render
    from perflab.studies.monitor import stored_result

    result = stored_result(store, campaign_id, workload) if campaign_id is not None else None
    if result is not None:
        render(result, console, sources_said)
    return result


def _energy_asked() -> bool:
    """Whether --energy (or its default from a config) was given, not just defaulted to auto."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return True
    from click.core import ParameterSource

    return ctx.get_parameter_source("energy_source") not in (None, ParameterSource.DEFAULT)


def instrument_wrap(model: Any, console: Any, advice: str | None = None, events: Any = None,
                    once: bool = False) -> Callable[[Any], Any]:
    """The wrap of the native executor for --instrument cachegrind (the executor itself where
    ``model`` is None), a context manager either way; each command's measured slowdown is said as
    it is known (``once``: only the first, where every command costs about the same)."""
    import contextlib

    if model is None:
        return contextlib.nullcontext
    from perflab.measure.cachegrind import CachegrindExecutor
    from perflab.report.terminal.instrument import RUN_ADVICE, cost_line

    said: list[str] = []

    def say(label, cost):
        if not (once and said):
            said.append(label)
            console.print(cost_line(label, cost, advice or RUN_ADVICE), highlight=False, markup=False)

    extra = {} if events is None else {"events": events}
    return lambda native: contextlib.closing(CachegrindExecutor(native, model, on_cost=say, **extra))


def run_and_render(module: Any, config: Any, console: Any, render: Callable[[Any, Any], None],
                   db_url: str | None, json_path: str | None, *, wrap: Callable[[Any], Any] | None = None,
                   tune: Tune = Tune(), fast: bool = False, bar: bool = False, gate: Any = None,
                   results_line: str = "results: {store} (campaign {campaign})",
                   finish: Callable[[Any], None] | None = None, **study: Any) -> Any:
    """Run a study in a new campaign, render its result, say where it is stored, write --json;
    the result back. ``wrap``: a context manager around the native executor that measures through
    it (an instrument); ``tune``: the command's --tune (tuned_study); ``fast``: the store through open_fast (SQLite without SQLAlchemy, for a
    command whose start-up counts); ``bar``: progress as one transient line on a terminal (none
    elsewhere) rather than a line per step; ``gate``: a RunGate, checked before the runs and
    applied after them; ``finish``: more output of the result (exports) before --json;
    ``study``: more arguments of run_study."""
    import contextlib

    from perflab import startup
    from perflab.cli.options import tuned_study
    from perflab.measure import metrics
    from perflab.measure.executor import default_executor
    from perflab.model import Workload
    from perflab.studies import run_study

    if fast:
        from perflab.store.lite import open_fast

        opener: Callable[[str | None], Any] = open_fast
    else:
        from perflab.store import open_store

        opener = open_store
    with tuned_study(tune, config, lambda text: console.print(text, highlight=False, markup=False)), \
            opener(db_url) as store, default_executor() as native, \
            (wrap(native) if wrap else contextlib.nullcontext(native)) as executor:
        if gate is not None:
            gate.precheck(store)
            config = gate.bind(config, store)
        startup.end()  # every module the study needs is loaded: collect normally from here
        metrics.reset_ledger()  # check_metrics judges this command's runs only
        result = _run_with_progress(run_study, module, config, store, executor, console, bar, study)
        check_metrics(config, console)  # a never-measured primary metric stops here (exit 2)
        render(result, console)
        # the monitor counts events by the workload's event metric (a run names no Workload record)
        workload = config.workload if isinstance(getattr(config, "workload", None), Workload) else None
        watched = render_monitor(store, result.campaign_id, workload, console) \
            if study.get("monitor") is not None else None
        console.print(results_line.format(store=store.display, campaign=result.campaign_id), highlight=False)
        save_baseline(store, result.campaign_id)
        if finish is not None:
            finish(result)
        if json_path:
            emit_json(json_path, result.as_dict() if watched is None else {**result.as_dict(), "monitor": watched.as_dict()},
                      module.NAME)
        if gate is not None:
            gate.after(store, result.campaign_id, stdout_taken=console.stderr)
    return result


def _run_with_progress(run_study: Callable[..., Any], module: Any, config: Any, store: Any, executor: Any,
                       console: Any, bar: bool, study: dict[str, Any]) -> Any:
    """run_study with its progress said: a line per step, or (``bar``) one transient line that
    rich refreshes from its own thread at 4 Hz, so no run waits on a terminal write."""
    if not bar:
        return run_study(module, config, store, executor,
                         progress=lambda text: console.print(text, highlight=False), **study)
    if not console.is_terminal:
        return run_study(module, config, store, executor, **study)
    from rich.progress import Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
                  transient=True, refresh_per_second=4) as progress_bar:
        task = progress_bar.add_task("measuring")
        return run_study(module, config, store, executor, **study,
                         progress=lambda text: progress_bar.update(task, description=f"measuring: {text}"))


def check_metrics(config: Any, console: Any) -> None:
    """One warning line per metric regex that gave no number in any run; a PerflabError (exit 2,
    before the result is shown) when the primary metric is one of them."""
    from perflab.measure.metrics import hygiene

    primary = getattr(config, "primary_metric", None)
    if primary is None:
        primary = getattr(getattr(config, "workload", None), "primary_metric", None)
    warnings, error = hygiene(primary)
    for line in warnings:
        console.print(f"warning: {line}", highlight=False, markup=False)
    if error:
        raise PerflabError(error)


def _baseline_name(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    # Checked before anything runs; kept in the context so every study's path can save it.
    if value is not None:
        from perflab.store.baselines import check_name

        ctx.meta["perflab.baseline_save"] = check_name(value)


def baseline_save_option(f: Callable) -> Callable:
    """``--baseline-save NAME``: after the study, name its campaign (see save_baseline)."""
    return click.option("--baseline-save", metavar="NAME", expose_value=False, callback=_baseline_name,
                        help="After the study, name its campaign NAME, the baseline that "
                             "'perflab compare --baseline NAME' gates later campaigns against.")(f)


def save_baseline(store: Any, campaign_id: int | None) -> None:
    """Name the finished campaign as --baseline-save asked (nothing when it was not given)."""
    name = click.get_current_context().meta.get("perflab.baseline_save")
    if name and campaign_id is not None:
        b = store.set_baseline(name, campaign_id)
        click.echo(f"perflab: baseline '{b.name}' -> campaign {b.campaign_id}", err=True)


def study_output_options(f: Callable) -> Callable:
    """Where a measuring study's results go: ``--baseline-save``, ``--db``, ``--json``."""
    return baseline_save_option(store_option(json_option(f)))
