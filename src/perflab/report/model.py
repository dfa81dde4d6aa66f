"""The report's data model: sections of tables and plots built from stored campaigns.

Renderers (HTML, Markdown) only lay these out; everything that comes from a workload or a config
is kept as plain text here and escaped by the renderer.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[object]]
    note: str = ""


@dataclass
class Plot:
    title: str
    svg: str  # an inline <svg> document produced by matplotlib (trusted: we made it)
    caption: str = ""
    desc: str = ""  # the plot's finding in words, for screen readers (default: the caption or verdict)


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


@dataclass
class Report:
    title: str
    generated: str
    version: str
    machine: Section | None
    sections: list[Section]
    answers: list[Answer] = field(default_factory=list)
