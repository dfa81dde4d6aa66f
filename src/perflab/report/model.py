"""The report's data model: sections of tables and plots built from stored campaigns.

Renderers (HTML, Markdown) only lay these out; everything that comes from a workload or a config
is kept as plain text here and escaped by the renderer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence


class Code(str):
    """A cell that is code (a C++ symbol, an object's path): Markdown shows it in a code span,
    where '<' and '*' are literal, so `std::vector<mh::Particle>` reads as written."""


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: Sequence[Sequence[object]]
    note: str = ""


@dataclass
class Mark:
    """One plotted point and the table row it comes from: what the plot claims about that row."""

    row: int  # index into the source table's rows
    value: float  # the plotted estimate (the value in the table's plotted column)
    status: str  # plots.BETTER, WORSE, NOT_SIGNIFICANT or ESTIMATE (no test made)


@dataclass
class Plot:
    title: str
    svg: str  # an inline <svg> document produced by matplotlib (trusted: we made it)
    caption: str = ""
    desc: str = ""  # the plot's finding in words, for screen readers (default: the caption or verdict)
    # What the plot draws, so that a test can hold it against its table: the source table's
    # title, the column plotted, its unit ("" for a ratio), the intervals' level, one mark per row.
    source: str = ""
    column: str = ""
    unit: str = ""
    level: str = ""
    marks: list[Mark] = field(default_factory=list)


@dataclass
class Section:
    key: str  # anchor id, e.g. "cores-12"
    title: str
    verdict: str  # one sentence
    tables: list[Table] = field(default_factory=list)
    plots: list[Plot] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    campaign_id: int | None = None
    status: str = "done"


@dataclass
class Answer:
    """One row of the summary table the report opens with."""

    question: str
    answer: str  # in words: the section's verdict
    evidence: str  # effect with CI and level, a p-value, or "not significant"
    caveats: list[str]
    key: str  # the section it links to
    basis: str = ""  # how much evidence: rounds, runs, the CI level reached
    program: str = ""  # what was measured: the user's workload, or a built-in program (marked)


@dataclass
class Report:
    title: str
    generated: str
    version: str
    machine: Section | None
    sections: list[Section]
    answers: list[Answer] = field(default_factory=list)
