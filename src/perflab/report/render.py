"""Lay a Report out as a self-contained HTML file (inline CSS and SVG) or as Markdown.

Jinja2 autoescaping covers every string that came from a workload, a command line or a config;
only the SVG that perflab's own plotting produced is inserted as markup.
"""

from __future__ import annotations

import re

import textwrap

from perflab.report.model import Code, Report, Section, Table
from perflab.report.numbers import format_cell, plural
from perflab.report.plots import accessible

__all__ = ["format_cell", "is_text", "to_html", "to_markdown", "table_to_markdown"]


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
    out = (str(text).replace("\\", "\\\\").replace("|", "\\|").replace("*", "\\*").replace("<", "&lt;")
           .replace("\n", " "))
    return "\\" + out if out.startswith(">") else out


def _md_code(text: str) -> str:
    """A code span fenced by more backticks than the text holds in a row; only '|' is escaped
    (a GFM table splits its cells before it reads code spans)."""
    text = str(text).replace("\n", " ").replace("|", "\\|")
    fence = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _md_cell(value: object) -> str:
    return _md_code(value) if isinstance(value, Code) and value else _md_escape(format_cell(value))


def _wrap(text: str, prefix: str = "", first: str | None = None) -> list[str]:
    """Prose lines of at most 80 columns (a Markdown linter's line length; the paragraph is the
    same once rendered), cut at spaces only, never inside a word."""
    return textwrap.wrap(text, 80, initial_indent=prefix if first is None else first, subsequent_indent=prefix,
                         break_long_words=False, break_on_hyphens=False) or [prefix.rstrip()]


def anchor(title: str) -> str:
    """The id a Markdown renderer gives a heading (GitHub's rule): lower case, punctuation
    dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def _rule(n: int) -> str:
    """A table's delimiter row, spaced as its cells are (the linter's compact style)."""
    return "| " + " | ".join(["---"] * n) + " |"


def table_to_markdown(t: Table) -> str:
    # a table's title ends with a colon: bold text, not a heading in disguise
    lines = _wrap(f"**{_md_escape(t.title.rstrip(':'))}:**") + [""] if t.title else []
    lines.append("| " + " | ".join(_md_escape(c) for c in t.columns) + " |")
    lines.append(_rule(len(t.columns)))
    for row in t.rows:
        lines.append("| " + " | ".join(_md_cell(c) for c in row) + " |")
    if t.note:
        lines += [""] + _wrap(f"Note: {_md_escape(t.note)}")
    return "\n".join(lines)


def _section_md(s: Section) -> str:
    out = [f"## {_md_escape(s.title)}", ""]
    for t in s.tables:
        out += [table_to_markdown(t), ""]
    out += _wrap(_md_escape(s.verdict), "> ") + [""]
    if s.plots:
        out += _wrap(f"{plural(len(s.plots), 'plot')} in the HTML report: "
                     + "; ".join(_md_escape(p.title) for p in s.plots) + ".") + [""]
    for n in s.notes:
        out += _wrap(_md_escape(n), "  ", "- ")
    return "\n".join(out).rstrip() + "\n"


ANSWER_COLUMNS = ["question", "answer", "evidence", "rests on", "measured on", "caveats", "section"]


def to_markdown(report: Report) -> str:
    out = [f"# {_md_escape(report.title)}", "", f"Generated {report.generated} by perflab {report.version}.", ""]
    keys = {s.key: anchor(s.title) for s in report.sections + ([report.machine] if report.machine else [])}
    if report.answers:
        out += ["## Answers", "", "| " + " | ".join(ANSWER_COLUMNS) + " |", _rule(len(ANSWER_COLUMNS))]
        out += [f"| {_md_escape(a.question)} | {_md_escape(a.answer)} | {_md_escape(a.evidence or '—')} | "
                f"{_md_escape(a.basis or '—')} | {_md_escape(a.program or '—')} | "
                f"{_md_escape('; '.join(a.caveats) or '—')} | [details](#{keys.get(a.key, a.key)}) |"
                for a in report.answers]
        out.append("")
    for s in report.sections:
        out.append(_section_md(s))
    if report.machine:
        out.append(_section_md(report.machine))
    return "\n".join(out).rstrip() + "\n"
