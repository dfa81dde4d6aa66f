"""perflab report [CAMPAIGN...] -o FILE: a self-contained HTML (or Markdown) report."""

from __future__ import annotations

import click

from perflab.cli.common import store_option
from perflab.cli.options import Count, OutputPath


def _journal_warnings(store, ids: set[int]) -> None:
    """Runs a perflab killed mid-batch left in its journal are in no report until resumed."""
    from perflab.studies.session import journalled_runs

    for cid, n in sorted(journalled_runs(store).items()):
        if cid in ids:
            runs = "run" if n == 1 else "runs"
            click.echo(f"perflab: warning: campaign {cid} has {n} more measured {runs} in the journal of a "
                       f"perflab that was killed, not in this report: 'perflab resume {cid}' stores them",
                       err=True)


@click.command("report")
@click.argument("campaigns", nargs=-1, type=Count(1, 2**31 - 1))
@click.option("-o", "--output", "output", metavar="FILE", type=OutputPath(), help="Write here (default: report.html or report.md; '-' for stdout).")
@click.option("--format", "fmt", type=click.Choice(["html", "markdown"]), default=None,
              help="Output format (default: from the file name, else html).")
@click.option("--title", default=None, help="Report title.")
@store_option
def command(campaigns: tuple[int, ...], output: str | None, fmt: str | None, title: str | None,
            db_url: str | None) -> None:
    """Report on CAMPAIGN ids (a lab campaign expands to its studies; default: the latest lab run,
    or, in a store without one, the newest campaign of each study)."""
    from perflab.report.build import build_report, select_campaigns
    from perflab.report.render import to_html, to_markdown
    from perflab.store import open_store

    if fmt is None:
        fmt = "markdown" if output and output.endswith((".md", ".markdown")) else "html"
    output = output or ("report.md" if fmt == "markdown" else "report.html")
    store = open_store(db_url)
    labs = [store.campaign(i) for i in campaigns] if campaigns else store.campaigns(study="lab")[-1:]
    lab = labs[0] if len(labs) == 1 and labs[0].study == "lab" else None
    selected = select_campaigns(store, campaigns)
    if not campaigns and lab is None:  # say which campaigns stood in for a lab run
        chosen = ", ".join(f"{c.id} ({c.study})" for c in selected)
        click.echo(f"perflab: no lab run in {store.display}: reporting the newest campaign of each study: "
                   f"{chosen}; name campaigns to choose others", err=True)
    report = build_report(store, selected, title, lab=lab)
    _journal_warnings(store, {c.id for c in selected})
    text = to_markdown(report) if fmt == "markdown" else to_html(report)
    if output == "-":
        click.echo(text)
        return
    with open(output, "w", encoding="utf-8") as fh:
        fh.write(text)
    studies = sum(not s.key.startswith("monitor-") for s in report.sections)  # a monitor section is no study
    click.echo(f"perflab: wrote {output} ({studies} studies, {len(text) // 1024} KiB)")
