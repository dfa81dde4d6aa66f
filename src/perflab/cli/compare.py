"""perflab compare A B | --baseline NAME CAMPAIGN: two campaigns side by side, or the gate."""

from __future__ import annotations

import json
import math

import click

from perflab.cli.common import json_option, make_console, store_option
from perflab.cli.options import MetricChoice, primary_metric_options
from perflab.cli.gate_common import (
    GATE_EXITS_HELP,
    cross_machine_option,
    exit_for,
    fail_if_option,
    junit_option,
    run_gate,
    thresholds_of,
    write_output,
)
from perflab.errors import PerflabError
from perflab.report.html.compare import compare_html
from perflab.report.terminal.compare import render
from perflab.store import open_store
from perflab.store import dumps, envelope
from perflab.studies.compare.study import CompareConfig, run_compare
from perflab.studies.gate.study import GateConfig


@click.command("compare", epilog=GATE_EXITS_HELP)
@click.argument("campaigns", nargs=-1)
@click.option("--baseline", "baseline", metavar="NAME",
              help="Gate CAMPAIGN against the named baseline (see 'perflab baseline'): exit 1 on a "
                   "regression, 3 when the runs cannot tell.")
@fail_if_option
@cross_machine_option
@click.option("--alpha", default=0.05, show_default=True, type=click.FloatRange(0, 0.5, min_open=True),
              help="Significance level (Holm-corrected); CIs are at level 1 - alpha.")
@click.option("--min-effect", "min_effect", default="1%", show_default=True, metavar="PCT",
              help="Changes smaller than this are never called significant: the CI of B/A must "
                   "lie wholly outside 1 +- PCT.")
@click.option("--format", "fmt", type=click.Choice(["table", "markdown"]), default="table", show_default=True)
@click.option("--html", "html_path", metavar="PATH", type=click.Path(dir_okay=False),
              help="Write a self-contained HTML page of B/A ratios with their CIs.")
@click.option("--markdown", "markdown_path", metavar="PATH", type=click.Path(dir_okay=False),
              help="With --baseline: write the gate's table as Markdown (a merge-request comment).")
@junit_option
@primary_metric_options
@store_option
@json_option
def command(campaigns: tuple[str, ...], baseline: str | None, fail_if: tuple[str, ...],
            cross_machine: bool, alpha: float, min_effect: str, fmt: str, html_path: str | None,
            markdown_path: str | None, junit_path: str | None, db_url: str | None,
            json_path: str | None, metric: MetricChoice) -> None:
    """Compare campaign A with campaign B: ratio B/A per measure, with CI and p-value.

    Exit status: 0 with an answer; 3 where the runs are too few to tell (compare: no row of the
    primary measure could have shown a change; gate: UNSURE); 1 where the gate fails; 2 on bad input.

    \b
    perflab compare 3 7 --html cmp.html
    perflab compare 3,4,5 8,9,10      # replicate campaigns a side: drift measured
    perflab compare 3 7 --primary-metric fps --higher-is-better
    perflab compare --baseline main 7 --fail-if 'median>+3%' --junit gate.xml
    """
    choice = metric
    if baseline is not None:
        if choice != MetricChoice():
            raise PerflabError("--primary-metric and --higher-is-better/--lower-is-better belong to "
                               "'perflab compare A B'; the gate judges the measures its --fail-if names")
        if len(campaigns) != 1:
            raise PerflabError("--baseline NAME takes one CAMPAIGN to gate: perflab compare --baseline "
                               "main 7 --fail-if 'median>+3%'")
        gate = GateConfig(baseline, _ids(campaigns[0], one=True)[0], thresholds_of(fail_if), alpha, cross_machine)
        store = open_store(db_url)
        exit_for(run_gate(store, gate, junit_path, markdown_path, json_path, html_path))
        return
    if len(campaigns) != 2:
        raise PerflabError("compare takes two campaigns A B (ids from 'perflab results'), or "
                           "--baseline NAME CAMPAIGN")
    for flag, value in (("--fail-if", fail_if), ("--junit", junit_path), ("--markdown", markdown_path),
                        ("--cross-machine", cross_machine)):
        if value:
            raise PerflabError(f"{flag} belongs to the gate: give --baseline NAME CAMPAIGN")
    # A count does not drift with the machine: its band is the one given, none by default.
    given = click.get_current_context().get_parameter_source("min_effect") != click.core.ParameterSource.DEFAULT
    ids_a, ids_b = _ids(campaigns[0]), _ids(campaigns[1])
    config = CompareConfig(a=ids_a[0], b=ids_b[0], more_a=ids_a[1:], more_b=ids_b[1:], alpha=alpha,
                           min_effect=_fraction(min_effect),
                           counted_min_effect=_fraction(min_effect) if given else 0.0,
                           metric=choice.name, higher_is_better=choice.higher_is_better)
    store = open_store(db_url)
    if len(ids_a) == len(ids_b) == 1 and _scores(store, ids_a[0], ids_b[0], alpha):
        return
    _compare(store, config, fmt, json_path, html_path, choice)


def _scores(store, a: int, b: int, alpha: float) -> bool:
    """Two score campaigns (measured or imported) compare by their scores (perflab score --compare);
    False for any other pair."""
    from perflab.report.terminal.score import render_difference
    from perflab.studies.score.stored import difference, load_campaign

    if store.campaign(a).study != "score" or store.campaign(b).study != "score":
        return False
    ra, rb = load_campaign(store, a), load_campaign(store, b)
    diff, why = difference(ra, rb, 1 - alpha)
    render_difference(ra, rb, diff, why, alpha, make_console())
    return True


def _ids(text: str, one: bool = False) -> tuple[int, ...]:
    """'7' -> (7,), '3,4,5' -> (3, 4, 5): a side's campaign ids."""
    try:
        ids = tuple(int(x) for x in text.split(","))
    except ValueError:
        ids = ()
    if not ids or (one and len(ids) > 1):
        what = "one campaign id" if one else "a campaign id or a comma-separated list of them (3,4,5)"
        raise PerflabError(f"{text!r} is not {what}: list campaigns with 'perflab results'")
    return ids


def _fraction(text: str) -> float:
    """'1%' or '1' -> 0.01: --min-effect in per cent."""
    try:
        pct = float(text.strip().removesuffix("%"))
    except ValueError:
        pct = math.nan
    if not 0.0 <= pct < 100.0:
        raise PerflabError(f"--min-effect {text!r}: give a percentage from 0 to under 100, e.g. "
                           "--min-effect 2%")
    return pct / 100.0


def _compare(store, config: CompareConfig, fmt: str, json_path: str | None, html_path: str | None,
             choice: MetricChoice = MetricChoice()) -> None:
    result = run_compare(config, store)
    if choice.name and result.primary != f"metric:{choice.name}":
        have = sorted({r.measure.removeprefix("metric:") for r in result.rows if r.measure.startswith("metric:")})
        raise PerflabError(f"--primary-metric {choice.name}: campaigns {config.a} and {config.b} have no "
                           f"metric {choice.name} ({'their metrics are ' + ', '.join(have) if have else 'they have no metric'})")
    if json_path != "-":
        render(result, make_console(), fmt)
    if json_path:
        write_output(json_path, json.dumps(json.loads(dumps(envelope.wrap("compare", result.as_dict()))), indent=2) + "\n",
                     "JSON")
    if html_path:
        camps = [store.campaign(config.a), store.campaign(config.b)]
        hosts = [store.host(c.host_id)["hostname"] if c.host_id is not None else "unrecorded"
                 for c in camps]
        write_output(html_path, compare_html(result, camps, hosts), "HTML")
    if result.cannot_tell:
        raise SystemExit(3)  # as the gate's UNSURE: too few runs to tell, not "no difference"

