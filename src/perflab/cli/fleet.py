"""`perflab fleet submit|status|resubmit|cancel|collect|report`: one study across a farm, on Slurm."""

from __future__ import annotations

import math
import json
import sys
from pathlib import Path

import click

from perflab.cli import cli
from perflab.cli.common import make_console, store_option
from perflab.errors import PerflabError
from perflab.fleet import state
from perflab.fleet.collect import collect as do_collect
from perflab.fleet.render import report_html, report_terminal, status_table
from perflab.fleet.report import build
from perflab.fleet.submit import FleetRequest, resubmit as do_resubmit, submit as do_submit
from perflab.fleet.submitter import Placement, submitter
from perflab.store import dumps, open_store
from perflab.store.url import redact_url


def _console():

    return make_console(highlight=False)


def _write(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
        return
    try:
        Path(path).write_text(text)
    except OSError as exc:
        raise PerflabError(f"cannot write {path}: {exc.strerror}; choose another path") from None


def _check_study(argv: tuple[str, ...]) -> None:
    """The study's command line parses (types, ranges, choices); nothing is run."""
    study, args = argv[0], list(argv[1:])
    ctx = click.Context(cli)
    try:
        cli.get_command(ctx, study).make_context(study, args, parent=ctx)  # type: ignore[union-attr]  # one of submit.STUDIES, checked first
    except click.exceptions.Exit:
        raise PerflabError(f"the study options print help instead of running: {' '.join(args)}") from None
    except click.ClickException as exc:
        raise PerflabError(f"the {study} study rejects its options: {exc.format_message()}") from None


def _finite(ctx: click.Context, param: click.Parameter, value: float) -> float:
    # click's FloatRange lets nan through (every comparison with nan is false).
    if math.isnan(value) or value in (float("inf"), float("-inf")):
        raise click.BadParameter(f"{value} is not a finite number", ctx=ctx, param=param)
    return value


@click.group(name="fleet")
def command() -> None:
    """Run one study on every node of a farm through Slurm, into one results store.

    \b
    perflab fleet submit trig --nodes 40 --partition batch --db postgresql://perflab@db/lab -- instances -w minihlt
    perflab fleet status trig --db postgresql://perflab@db/lab
    perflab fleet report trig --db postgresql://perflab@db/lab --json trig.json
    """


@command.command(context_settings={"ignore_unknown_options": True})
@click.argument("name")
@click.option("--partition", metavar="P", help="Slurm partition (default: the cluster's default).")
@click.option("--nodes", type=click.IntRange(1, 100000), metavar="N",
              help="N distinct nodes that are up, one task each (with --host-label: N array tasks).")
@click.option("--nodelist", metavar="LIST", help="These nodes, one job each (comma-separated names).")
@click.option("--constraint", metavar="C", help="Slurm node feature constraint.")
@click.option("--time", "time_limit", metavar="T", help="Time limit per task (Slurm syntax, e.g. 30:00).")
@click.option("--no-exclusive", is_flag=True, help="Share nodes with other jobs (the measurements are then worthless for comparison).")
@click.option("--shards", metavar="DIR", help="Tasks write per-node SQLite files under DIR (shared or node-local); merge them with fleet collect.")
@click.option("--python", "python", metavar="PATH", default=sys.executable, show_default=True,
              help="Python with perflab installed, at the same path on every node.")
@click.option("--bundle", metavar="ARCHIVE", help="A perflab bundle every node unpacks; {bundle} in the study arguments is its directory.")
@click.option("--log-dir", metavar="DIR", help="Script and Slurm logs (default: ./perflab-fleet/NAME; shared, for status).")
@click.option("--max-parallel", type=click.IntRange(1, 100000), metavar="K",
              help="Run at most K slots at once (K chains of jobs, or %K of an array with --host-label).")
@click.option("--visits", type=click.IntRange(1, 100), metavar="V",
              help="Measure each node V times, in V rounds that visit every node once (the order rotated "
                   "each round); the report then compares the nodes round by round. Costs V times the "
                   "study per node. Default: 3 where --max-parallel is below the number of nodes, else 1.")
@click.option("--host-label", metavar="PREFIX", help="Record each slot as host PREFIX-SLOT (test clusters where tasks share a machine).")
@store_option
@click.argument("study_argv", nargs=-1, type=click.UNPROCESSED)
def submit(name, partition, nodes, nodelist, constraint, time_limit, no_exclusive, shards, python, bundle,
           log_dir, max_parallel, visits, host_label, db_url, study_argv) -> None:
    """Submit STUDY (after --) to every node: perflab fleet submit NAME --nodes N -- STUDY [OPTIONS].

    A task whose results store stayed unreachable finishes into its own SQLite shard and exits 3
    (the slot reads "stored in shard"; 'perflab fleet collect NAME' merges it).
    """

    console = _console()
    argv = tuple(study_argv)
    nodelist_t = tuple(n for n in (nodelist or "").split(",") if n)
    placement = Placement(nodes=nodes, nodelist=nodelist_t, partition=partition, constraint=constraint,
                          time=time_limit, exclusive=not no_exclusive, max_parallel=max_parallel,
                          visits=visits or 0)
    req = FleetRequest(name=name, study_argv=argv, placement=placement, db=db_url or "", shards=shards,
                       python=python, log_dir=log_dir, host_label=host_label, bundle=bundle)
    with open_store(db_url) as store:
        fleet = do_submit(req, store, submitter(), _check_study)
        if fleet.config.get("note"):
            console.print(f"fleet {name}: {fleet.config['note']}", style="yellow", soft_wrap=True)
        if no_exclusive:
            console.print("warning: --no-exclusive: another job may run on a node while it is measured; "
                          "compare such hosts with care", style="yellow", soft_wrap=True)
        jobs = sorted(set(j.split("_")[0] for j in fleet.jobs.values()), key=lambda j: (len(j), j))
        jobs_text = ", ".join(jobs) if len(jobs) <= 8 else f"{jobs[0]} ... {jobs[-1]}"
        nodes = list(dict.fromkeys(fleet.nodes.values()))  # a node's visits: one node
        on = f" on {len(nodes)} distinct nodes ({', '.join(nodes[:8])}{' ...' if len(nodes) > 8 else ''})" \
            if fleet.nodes and not fleet.config["placement"]["nodelist"] else ""
        console.print(f"fleet {name}: submitted {len(fleet.jobs)} task(s) of '{' '.join(argv)}'{on} as Slurm "
                      f"job(s) {jobs_text}; results to {redact_url(fleet.config['db'])}; "
                      f"script and logs in {fleet.config['log_dir']}", soft_wrap=True)
        v = fleet.config.get("visits", 1)
        if v > 1:
            k = fleet.config["placement"].get("max_parallel") or len(fleet.jobs) // v
            console.print(f"fleet {name}: {len(fleet.jobs)} jobs: {v} visits to each of {len(fleet.jobs) // v} "
                          f"nodes in {v} rounds, at most {k} at once; each visit runs the whole study "
                          f"({v} times the study a node)", soft_wrap=True)
        again = "URL" if "***" in store.display else store.display
        console.print(f"next: perflab fleet status {name} --db {again}", soft_wrap=True)


@command.command()
@click.argument("name")
@store_option
@click.option("--json", "json_path", metavar="PATH", help="Also write the slots as JSON ('-' for stdout).")
def status(name, db_url, json_path) -> None:
    """Per slot: pending, running, done or failed (Slurm's queue, the store, the task's log)."""
    with open_store(db_url) as store:
        fleet = state.load(store, name)
        slots = state.slot_states(store, fleet, submitter(fleet.config.get("submitter", "slurm")))
    if json_path:
        _write(json_path, json.dumps([s.__dict__ for s in slots], indent=2) + "\n")
    if json_path != "-":
        status_table(name, slots, _console())


@command.command()
@click.argument("name")
@click.option("--missing", is_flag=True, required=True, help="Rerun only the slots without a finished campaign.")
@store_option
def resubmit(name, missing, db_url) -> None:
    """Submit again the slots that failed (queued and running ones are left alone)."""

    with open_store(db_url) as store:
        fleet = state.load(store, name)
        jobs, notes = do_resubmit(store, fleet, submitter(fleet.config.get("submitter", "slurm")), db_url or "")
    for line in notes:
        _console().print(f"fleet {name}: {line}", style="yellow", soft_wrap=True)
    if not jobs:
        _console().print(f"fleet {name}: no failed slot to resubmit")
        return
    _console().print(f"fleet {name}: resubmitted slot(s) {', '.join(jobs)} as {', '.join(jobs.values())}")


@command.command()
@click.argument("name")
@store_option
def cancel(name, db_url) -> None:
    """Cancel the fleet's queued and running tasks (finished campaigns stay in the store)."""
    with open_store(db_url) as store:
        fleet = state.load(store, name)
        batch = submitter(fleet.config.get("submitter", "slurm"))
        live = [s for s in state.slot_states(store, fleet, batch) if s.state in ("pending", "running")]
        batch.cancel([s.job for s in live if s.job])
    if not live:
        _console().print(f"fleet {name}: no queued or running task to cancel")
        return
    _console().print(f"fleet {name}: cancelled slot(s) {', '.join(s.slot for s in live)} "
                     f"(job(s) {', '.join(s.job for s in live if s.job)})", soft_wrap=True)


@command.command()
@click.argument("name")
@click.option("--from", "shard_dir", metavar="DIR",
              help="Directory of the tasks' SQLite shards (default: the fleet's --shards directory, else "
                   "the shards its tasks kept when the store was unreachable).")
@store_option
def collect(name, shard_dir, db_url) -> None:
    """Merge the fleet's per-node SQLite shards into one store (collecting twice adds nothing)."""

    with open_store(db_url) as store:
        if shard_dir is not None:
            where, required = Path(shard_dir), True
        elif (fleet := state.load(store, name)).config.get("shards"):
            where, required = Path(fleet.config["db"]), True
        else:  # the shards tasks kept where the store was lost: none is the usual case
            where, required = state.failover_dir(fleet.log_dir), False
        res = do_collect(name, where, store, required)
        console = _console()
        if not res.shards and not res.skipped:
            console.print(f"fleet {name}: no shard waiting in {where}", soft_wrap=True)
            return
        console.print(f"fleet {name}: {res.shards} shard(s) read; {res.copied} campaign(s) copied, "
                      f"{res.updated} updated, {res.unchanged} already there; {res.measurements} "
                      f"measurement(s) written to {store.display}", soft_wrap=True)
        if res.merged:
            console.print(f"merged, so renamed to NAME.db.merged: {', '.join(res.merged)}", soft_wrap=True)
        for s in res.skipped or []:
            console.print(f"skipped {s}", style="yellow", soft_wrap=True)


@command.command()
@click.argument("name")
@store_option
@click.option("--json", "json_path", metavar="PATH", help="Write the report as JSON ('-' for stdout).")
@click.option("--html", "html_path", metavar="PATH", help="Write the report as one HTML page.")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.05,
              show_default=True, callback=_finite,
              help="Family-wise error rate of the slow-node tests (Holm; Bonferroni where hosts are compared "
                   "by their medians).")
@click.option("--min-effect", type=click.FloatRange(0, 1, max_open=True), default=0.03, show_default=True,
              callback=_finite,
              help="A slow host is at least this much below its peers' median.")
@click.option("--test", "method", type=click.Choice(["auto", "runs", "medians"]), default="auto", show_default=True,
              help="How hosts are compared: every run (runs of the same time in time blocks, t-test over "
                   "the blocks, Holm; Mann-Whitney U where runs carry no times), their medians (sign test, "
                   "Bonferroni), or runs up to 1,000,000 values in all and medians beyond.")
def report(name, db_url, json_path, html_path, alpha, min_effect, method) -> None:
    """Hosts by platform, each platform's throughput, slow nodes, failed and missing nodes."""

    with open_store(db_url) as store:
        fleet = state.load(store, name)
        rep = build(store, fleet, submitter(fleet.config.get("submitter", "slurm")), alpha, min_effect, method)
    if json_path:
        try:
            # The report holds plain values: the C encoder takes them as they are, where the
            # store's dumps() first copies every value (2 s per 10,000 hosts). NaN or a value
            # json does not know (a numpy number) sends it the long way.
            text = json.dumps(rep, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError):
            text = dumps(rep)
        if len(rep["hosts"]) <= 1000:
            # Indented for a reader; a farm's report stays one line (json's indenting encoder is
            # pure Python: 20 s for 100,000 hosts, where the C one takes 2).
            text = json.dumps(json.loads(text), indent=2)
        _write(json_path, text + "\n")
    if html_path:
        _write(html_path, report_html(rep))
    if json_path != "-":
        report_terminal(rep, _console())
