"""perflab import FILE.json: a HEPscore result or a HEP Benchmark Suite report into the store as a
campaign of the score study."""

from __future__ import annotations

import click

from perflab.cli.common import emit_json, make_console, store_option, json_option
from perflab.report.terminal.score import render
from perflab.studies.score import hepjson
from perflab.studies.score.stored import store_imported


@click.command(name="import")
@click.argument("path", metavar="FILE.json", type=click.Path(dir_okay=False))
@store_option
@json_option
def command(path: str, db_url: str | None, json_path: str | None) -> None:
    """Import a HEPscore result or a HEP Benchmark Suite report (JSON) as a score campaign.

    The score is recomputed from the file's workloads, references and weights by HEPscore's own
    arithmetic and a mismatch with the file's 'score' is flagged; each repetition gives the score
    an interval, and each copy's value (the suite's HS06 and SPEC profiles) is tested for two speeds.
    """
    from perflab.store import open_store

    result = hepjson.load(path)  # bad input fails here, before the store is opened
    console = make_console(stderr=json_path == "-")
    with open_store(db_url) as store:
        store_imported(store, result, path)
        render(result, console)
        console.print(f"results: {store.display} (campaign {result.campaign_id})", highlight=False)
    if json_path:
        emit_json(json_path, result.as_dict(), "score")
