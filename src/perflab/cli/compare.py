"""perflab compare A B: two campaigns side by side with ratios, CIs and significance."""

from __future__ import annotations

import click

from perflab.cli.common import json_option, store_option


@click.command("compare")
@click.argument("a", type=int)
@click.argument("b", type=int)
@click.option("--alpha", default=0.05, show_default=True, help="Significance level (Holm-corrected).")
@click.option("--format", "fmt", type=click.Choice(["table", "markdown"]), default="table", show_default=True)
@store_option
@json_option
def command(a: int, b: int, alpha: float, fmt: str, db_url: str | None, json_path: str | None) -> None:
    """Compare campaign A with campaign B: ratio B/A per measure, with CI and p-value."""
    from perflab.store import open_store
    from perflab.studies.compare import CompareConfig, run_compare

    store = open_store(db_url)
    result = run_compare(CompareConfig(a=a, b=b, alpha=alpha), store)
    from perflab.report.model import Table
    from perflab.report.render import format_cell, table_to_markdown

    t = Table(
        f"campaign {a} ({result.study_a}) vs campaign {b} ({result.study_b})",
        ["measurement", "measure", "n A", "n B", "median A", "median B", "B/A", "95% CI", "p (Holm)", "verdict"],
        [[r.key, r.measure, r.n_a, r.n_b, r.median_a, r.median_b, f"{r.ratio:.4f}",
          f"[{r.lo:.4f}, {r.hi:.4f}]", f"{r.p_adjusted:.3g}",
          (f"{r.better} better" if r.better else "differs") if r.significant else "same"]
         for r in result.rows],
    )
    if json_path == "-":
        pass  # stdout carries the JSON alone, for pipes
    elif fmt == "markdown":
        click.echo(table_to_markdown(t))
    else:
        from rich.console import Console
        from rich.table import Table as RTable

        rt = RTable(title=t.title)
        for c in t.columns:
            rt.add_column(c, justify="left" if c in ("measurement", "measure") else "right")
        for row in t.rows:
            rt.add_row(*[format_cell(c) for c in row])
        Console().print(rt)
    if json_path != "-":
        click.echo(f"verdict: {result.verdict}")
    if json_path != "-" and (result.unmatched_a or result.unmatched_b):
        click.echo(f"unmatched: {len(result.unmatched_a)} only in A, {len(result.unmatched_b)} only in B")
    if json_path:
        import json

        text = json.dumps(result.as_dict(), indent=2)
        if json_path == "-":
            click.echo(text)
        else:
            with open(json_path, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
