"""Lay a Report out as a self-contained HTML file (inline CSS and SVG) or as Markdown.

Jinja2 autoescaping covers every string that came from a workload, a command line or a config;
only the SVG that perflab's own plotting produced is inserted as markup.
"""

from __future__ import annotations

import re

from perflab.report.model import Report, Section, Table
from perflab.report.plots import accessible


def format_cell(value: object) -> str:
    """The same rounding everywhere: 3 significant digits for measured (float) values, integers
    in full with thousands separators; None and NaN as an em dash."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if value != value:
            return "—"
        a = abs(value)
        if a == 0:
            return "0"
        if a >= 1e6 or a < 1e-3:
            return f"{value:.3g}"
        if a >= 1000:
            return f"{float(f'{value:.3g}'):,.0f}"
        return f"{value:.3g}"
    return str(value)


def is_text(value: object) -> bool:
    """A cell that holds words (left-aligned), not a number (right-aligned)."""
    return isinstance(value, str) and not value.replace(".", "").replace(",", "").replace("-", "").strip().isdigit()


_COMMENT = re.compile(r"<!--.*?-->\s*", re.S)


def to_html(report: Report) -> str:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("perflab.report", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["cell"] = format_cell
    env.filters["is_text"] = is_text
    for s in ([report.machine] if report.machine else []) + report.sections:
        for i, p in enumerate(s.plots):
            # matplotlib escapes comment text; dropping comments only shrinks the file.
            p.svg = accessible(_COMMENT.sub("", p.svg), p.title, p.desc or p.caption or s.verdict,
                               f"{s.key}-plot{i}")
    return env.get_template("report.html.j2").render(report=report)


def _md_escape(text: str) -> str:
    """Cell or line text as Markdown shows it: '<' entity-escaped so no text becomes HTML, '>'
    left as written ('wall_s>+5%' must read as the user typed it) but where it leads the text,
    where it would open a (nested) quote."""
    out = str(text).replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace("\n", " ")
    return "\\" + out if out.startswith(">") else out


def table_to_markdown(t: Table) -> str:
    lines = [f"**{_md_escape(t.title)}**", ""] if t.title else []
    lines.append("| " + " | ".join(_md_escape(c) for c in t.columns) + " |")
    lines.append("|" + "|".join(["---"] * len(t.columns)) + "|")
    for row in t.rows:
        lines.append("| " + " | ".join(_md_escape(format_cell(c)) for c in row) + " |")
    if t.note:
        lines += ["", f"_{_md_escape(t.note)}_"]
    return "\n".join(lines)


def _section_md(s: Section) -> str:
    out = [f'<a id="{s.key}"></a>', "", f"## {_md_escape(s.title)}", ""]
    for t in s.tables:
        out += [table_to_markdown(t), ""]
    out += [f"> {_md_escape(s.verdict)}", ""]
    if s.plots:
        out.append(f"_{len(s.plots)} plot(s) in the HTML report._")
        out.append("")
    for n in s.notes:
        out.append(f"- {_md_escape(n)}")
    return "\n".join(out).rstrip() + "\n"


def to_markdown(report: Report) -> str:
    out = [f"# {_md_escape(report.title)}", "", f"Generated {report.generated} by perflab {report.version}.", ""]
    if report.answers:
        out += ["## Answers", "", "| question | answer | evidence | caveats | section |", "|---|---|---|---|---|"]
        out += [f"| {_md_escape(a.question)} | {_md_escape(a.answer)} | {_md_escape(a.evidence or '—')} | "
                f"{_md_escape('; '.join(a.caveats) or '—')} | [details](#{a.key}) |" for a in report.answers]
        out.append("")
    for s in report.sections:
        out.append(_section_md(s))
    if report.machine:
        out.append(_section_md(report.machine))
    return "\n".join(out)
