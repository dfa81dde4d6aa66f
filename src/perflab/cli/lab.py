"""perflab lab: the main job. Studies in turn, then one HTML report (and a Markdown copy)."""

from __future__ import annotations

import os
import time
from typing import Any

import click

from perflab.cli.common import check_metrics, make_console, monitor_options, open_monitor, render_monitor, store_option
from perflab.cli.options import MetricChoice, OutputDir, Tune, primary_metric_options, tune_options, tuned_study, default_of
from perflab.studies.lab.study import LabConfig
from perflab.errors import PerflabError


@click.command("lab", context_settings={"ignore_unknown_options": True})
@click.option("--workload", "-w", "workload", metavar="NAME|FILE",
              help="Workload name or a perflab.toml file (default: the built-in minihlt).")
@click.option("--config", "config_path", metavar="FILE", help="perflab.toml with workload definitions.")
@click.option("--quick", is_flag=True, help="Shrink every study: finishes in a few minutes on 2 CPUs.")
@click.option("--out", "out_dir", default=default_of(LabConfig, "out_dir"), show_default=True, type=OutputDir(),
              help="Directory for the report and the profiles.")
@click.option("--resume", is_flag=True,
              help="Carry on the newest unfinished lab from the store without repeating stored runs.")
@click.option("--studies", metavar="LIST", help="Comma-separated subset, e.g. run,cores,variants.")
@click.option("--budget", type=float, metavar="S",
              help="Seconds the full lab's studies may take (default 540); each study gets its share "
                   "of what is left, never fewer rounds than it needs to answer.")
@click.option("--seed", default=default_of(LabConfig, "seed"), show_default=True, help="Seed for every shuffled order.")
@primary_metric_options
@monitor_options(default=True)
@store_option
@tune_options
@click.argument("workload_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- ARGS...]")
def command(workload: str | None, config_path: str | None, quick: bool, out_dir: str, resume: bool,
            studies: str | None, budget: float | None, seed: int, monitor: bool, monitor_interval: float,
            idle_s: float, db_url: str | None, workload_args: tuple[str, ...], tune: Tune,
            metric: MetricChoice) -> None:
    """Build the workload, run the default studies, write the report.

    Default studies: run, cores, instances, variants, profile (of the slowest event), frontend,
    micro. Every measurement goes to the results store as it completes; --resume finishes an
    interrupted lab from the store. ARGS after -- are appended to the workload's command.
    """
    from dataclasses import replace
    from types import SimpleNamespace

    from perflab.measure import metrics
    from perflab.measure.executor import default_executor
    from perflab.report.terminal.lab import render
    from perflab.store import open_store
    from perflab.studies import resume_study, run_study
    from perflab.studies.lab import study as lab
    from perflab.studies.lab.steps import lab_workload

    if budget is not None and not 0 < budget < float("inf"):
        raise PerflabError(f"--budget must be a number of seconds above 0, got {budget:g}")
    if budget is not None and quick:
        raise PerflabError("--budget is the full lab's: the quick lab has fixed settings; drop --quick or --budget")
    config = lab.LabConfig(workload=workload, config_path=config_path, quick=quick, out_dir=out_dir,
                           budget=budget, seed=seed, workload_args=tuple(workload_args), studies=tuple(s.strip() for s in (studies or "").split(",") if s.strip()))
    lab.plan(config)  # unknown study names fail here, before anything is built
    choice = metric
    if resume and choice != MetricChoice():
        raise PerflabError("--resume carries on with the stored workload and its primary metric: drop "
                           "--primary-metric and --higher-is-better/--lower-is-better")
    # Checked on the unbuilt workload: a --primary-metric no regex captures fails before the build.
    # A resumed lab runs its stored workload: its primary metric is not known here.
    primary = None if resume else choice.apply(lab_workload(config, build=False)).primary_metric
    config = replace(config, primary_metric=choice.name, higher_is_better=choice.higher_is_better)
    console = make_console()
    watch = open_monitor(monitor, monitor_interval, idle_s, console)
    metrics.reset_ledger()
    with tuned_study(tune, config, lambda text: console.print(text, highlight=False, markup=False)), \
            open_store(db_url) as store, default_executor() as executor:
        console.print(f"perflab lab: results in {store.display}", highlight=False)
        with LabDisplay(console) as display:
            if resume:
                if workload_args:
                    raise PerflabError("--resume takes the stored workload and its arguments: drop the ARGS")
                unfinished = [c for c in store.campaigns(study="lab") if c.status != "done"]
                if not unfinished:
                    raise PerflabError(f"nothing to resume in {store.display}: start one with perflab lab")
                _, result = resume_study(store, unfinished[-1].id, executor, progress=display, monitor=watch)
            else:
                result = run_study(lab, config, store, executor, progress=display, name="lab", monitor=watch)
        # Before the lab's answer: a metric regex that never gave a number is a warning, a
        # primary metric never measured an error (the studies' own results are stored).
        check_metrics(SimpleNamespace(primary_metric=primary), console)
        html_path, md_path = _write_report(store, result)
        render(result, console, children=False)  # the live display printed each study's
        if watch is not None:
            render_monitor(store, result.campaign_id, None if resume else lab_workload(config, build=False), console)
        console.print(f"report: {html_path} (and {md_path}); lab campaign {result.campaign_id} in "
                      f"{store.display}", highlight=False)
    if lab.failed(result):
        # A study that broke fails the lab (exit 1, after the report); one this machine cannot
        # run (no perf, no Valgrind, no x32 kernel) is skipped with its reason and does not.
        raise SystemExit(1)


def _write_report(store: Any, result: Any) -> tuple[str, str]:
    from perflab.report.build import build_report, lab_children
    from perflab.report.render import to_html, to_markdown

    camp = store.campaign(result.campaign_id)
    report = build_report(store, lab_children(store, camp), title=None, lab=camp)
    os.makedirs(result.out_dir, exist_ok=True)
    html_path, md_path = os.path.join(result.out_dir, "report.html"), os.path.join(result.out_dir, "report.md")
    with open(html_path, "w", encoding="utf-8") as fh:
        fh.write(to_html(report))
    with open(md_path, "w", encoding="utf-8") as fh:
        fh.write(to_markdown(report))
    return html_path, md_path


class LabDisplay:
    """Lab's progress: one live display on a terminal (overall, current study, ETA); plain
    lines otherwise. Each study's result is printed once, as it arrives."""

    def __init__(self, console: Any) -> None:
        self.console = console
        self.bar: Any = None
        self.t0 = time.monotonic()

    def __enter__(self) -> "LabDisplay":
        if self.console.is_terminal:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn, TimeRemainingColumn)

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), TimeRemainingColumn(), console=self.console,
                                transient=True, refresh_per_second=4)
            self.bar.__enter__()
            self.overall = self.bar.add_task("lab", total=None)
        self.study = "preparing"
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)

    def __call__(self, text: str) -> None:
        # One line: the current study and its latest progress, the studies done, elapsed, ETA.
        if self.bar is not None:
            self.bar.update(self.overall, description=f"lab: {self.study}: {text[:90]}")

    def begin(self, name: str, index: int, total: int) -> None:
        self.study = name
        if self.bar is not None:
            self.bar.update(self.overall, total=total, completed=index, description=f"lab: {name}")
        else:
            self.console.print(f"[{index + 1}/{total}] {name} "
                               f"(elapsed {time.monotonic() - self.t0:.0f} s)", highlight=False)

    def end(self, name: str, outcome: Any) -> None:
        from perflab.report.terminal.lab import render_outcome

        if self.bar is not None:
            self.bar.advance(self.overall)
        render_outcome(outcome, self.console)
