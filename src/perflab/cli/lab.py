"""perflab lab: the main job. Studies in turn, then one HTML report (and a Markdown copy)."""

from __future__ import annotations

import click

from perflab.cli.common import store_option


@click.command("lab")
@click.option("--workload", "-w", "workload", metavar="NAME|FILE",
              help="Workload name or a perflab.toml file (default: the built-in minihlt).")
@click.option("--config", "config_path", metavar="FILE", help="perflab.toml with workload definitions.")
@click.option("--quick", is_flag=True, help="Shrink every study: finishes in a few minutes on 2 CPUs.")
@click.option("--out", "out_dir", default="perflab-lab", show_default=True, metavar="DIR",
              help="Directory for the report, profiles and the resume journal.")
@click.option("--resume", is_flag=True, help="Carry on an interrupted lab without repeating finished runs.")
@click.option("--studies", metavar="LIST", help="Comma-separated subset, e.g. run,cores,variants.")
@click.option("--seed", default=1, show_default=True, help="Seed for every shuffled order.")
@store_option
def command(workload: str | None, config_path: str | None, quick: bool, out_dir: str, resume: bool,
            studies: str | None, seed: int, db_url: str | None) -> None:
    """Capture the machine, build the workload, run the default studies, write the report.

    Default studies: run, cores, instances, variants, profile (of the slowest event), frontend,
    micro. Every measurement goes to the results store as it completes.
    """
    import os

    from rich.console import Console

    from perflab.measure.executor import default_executor
    from perflab.report.build import build_report, lab_children
    from perflab.report.render import to_html, to_markdown
    from perflab.store import open_store
    from perflab.studies.lab import LabConfig, run_lab

    console = Console()
    store = open_store(db_url)
    console.print(f"perflab lab: results in {store.display}")
    cfg = LabConfig(workload=workload, config_path=config_path, quick=quick, out_dir=out_dir,
                    resume=resume, seed=seed,
                    studies=tuple(s.strip() for s in studies.split(",") if s.strip()) if studies else ())
    summary = run_lab(cfg, store, default_executor(), console)
    lab = store.campaign(summary["lab_id"])
    report = build_report(store, lab_children(store, lab), title=f"perflab lab: {lab.id}")
    out = summary["out_dir"]
    os.makedirs(out, exist_ok=True)
    html_path, md_path = os.path.join(out, "report.html"), os.path.join(out, "report.md")
    with open(html_path, "w", encoding="utf-8") as fh:
        fh.write(to_html(report))
    with open(md_path, "w", encoding="utf-8") as fh:
        fh.write(to_markdown(report))
    console.rule("perflab lab")
    for s in report.sections:
        console.print(f"{s.title}: {s.verdict}", highlight=False, markup=False)
    console.print(f"{summary['verdict']} ({summary.get('executed_runs', 0)} runs executed, "
                  f"{summary.get('replayed_runs', 0)} replayed from the journal)")
    console.print(f"report: {html_path} (and {md_path}); lab campaign {lab.id} in {store.display}")
