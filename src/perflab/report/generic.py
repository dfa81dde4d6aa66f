"""Turn one stored campaign into a report Section: the generic view and the builder registry.

Each study stores its result as the campaign summary (a JSON dict). The generic builder renders
any summary: its ``verdict`` and every list of flat records as a table. A study's builder
(report/html/<study>.py) is registered with its study's Result.from_dict and takes the typed
result, decoded once here; a summary that does not decode (an interrupted or failed campaign's)
and a study with no builder are shown generically.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable, Sequence

from perflab.platform import owner
from perflab.report import plots
from perflab.report.model import Plot, Section, Table
from perflab.report.numbers import ci_of, ratio_figure
from perflab.store import dumps

if TYPE_CHECKING:
    from perflab.store import Campaign, Measurement

TITLES = {
    "run": "Timing",
    "cores": "Per-core scan",
    "instances": "Instance-count scan",
    "variants": "Build variants",
    "profile": "Profile of one event",
    "profile-diff": "Profile diff",
    "frontend": "Front-end scan",
    "micro": "Microbenchmarks",
    "footprint": "File footprint",
    "bundle": "Standalone bundle",
    "cost": "Platform cost model",
    "score": "Suite score",
}

_SKIP_KEYS = {"verdict", "tables", "notes"}


def _is_scalar(v: Any) -> bool:
    return v is None or isinstance(v, (str, int, float, bool))


def _records_table(title: str, records: list[dict]) -> Table | None:
    if not records or not all(isinstance(r, dict) for r in records):
        return None
    cols: list[str] = []
    for r in records:
        for k, v in r.items():
            if k not in cols and (_is_scalar(v) or _short_list(v)):
                cols.append(k)
    if not cols:
        return None
    rows = [[_cell(r.get(c)) for c in cols] for r in records]
    return Table(title=title.replace("_", " "), columns=[c.replace("_", " ") for c in cols], rows=rows)


def _short_list(v: Any) -> bool:
    return isinstance(v, (list, tuple)) and len(v) <= 8 and all(_is_scalar(x) for x in v)


def _cell(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return ", ".join(str(x) for x in v)
    return v


def status_of(campaign: Campaign) -> str:
    """The campaign's status, 'died' where it is running but its perflab is gone (killed before it
    could close the campaign: platform/owner.py)."""
    labels = getattr(campaign, "labels", None) or {}
    alive = owner.alive(labels.get("owner")) if campaign.status == "running" else None
    return owner.shown_status(campaign.status, alive)


def generic(campaign: Campaign, summary: dict) -> Section:
    """Any summary: verdict, explicit ``tables``, lists of records, and scalar facts."""
    title = TITLES.get(campaign.study, campaign.study)
    verdict = summary.get("verdict") or _default_verdict(campaign)
    sec = Section(
        key=f"{campaign.study}-{campaign.id}", title=f"{title} (campaign {campaign.id})",
        verdict=str(verdict), campaign_id=campaign.id, status=status_of(campaign),
    )
    for t in summary.get("tables", []) or []:
        if isinstance(t, dict) and "columns" in t and "rows" in t:
            sec.tables.append(Table(str(t.get("title", "")), [str(c) for c in t["columns"]],
                                    [[_cell(c) for c in row] for row in t["rows"]], str(t.get("note", ""))))
    facts = []
    for k, v in summary.items():
        if k in _SKIP_KEYS:
            continue
        if isinstance(v, list):
            tbl = _records_table(k, v)
            if tbl is not None and not any(x.title == tbl.title for x in sec.tables):
                sec.tables.append(tbl)
        elif _is_scalar(v) and v is not None and not isinstance(v, str) or (isinstance(v, str) and len(v) < 120):
            facts.append([k.replace("_", " "), v])
    if facts:
        sec.tables.insert(0, Table("Summary", ["quantity", "value"], facts))
    for n in summary.get("notes", []) or []:
        sec.notes.append(str(n))
    if status_of(campaign) == "died":
        sec.notes.append(f"campaign status: died (its perflab was gone before it closed the campaign); "
                         f"results are partial: 'perflab resume {campaign.id}' finishes it")
    elif campaign.status != "done":
        sec.notes.append(f"campaign status: {campaign.status}; results may be partial")
    return sec


def _default_verdict(campaign: Campaign) -> str:
    if campaign.status == "done":
        return f"{campaign.study}: finished (no verdict recorded)."
    return f"{campaign.study}: {status_of(campaign)}; partial results."


def _plot(sec: Section, title: str, make: Callable[[], str], caption: str = "", **what: Any) -> None:
    """Add a plot; a plot that cannot be drawn from a partial summary is noted, not fatal.
    ``what`` says what it draws (model.Plot: source, column, unit, level, marks)."""
    try:
        sec.plots.append(Plot(title, make(), caption, **what))
    except (KeyError, TypeError, ValueError, IndexError, ZeroDivisionError) as exc:
        sec.notes.append(f"plot '{title}' not drawn: {type(exc).__name__}: {exc}")


# study -> (its Result.from_dict, its section builder): the builder takes the typed result,
# decoded once here from the stored summary, never the summary's dict.
BUILDERS: dict[str, tuple[Callable[[dict], Any], Callable[[Campaign, Any, list[Measurement]], Section]]] = {}


def builder(study: str, result: Callable[[dict], Any]):
    """Register a study's section builder, handed the result ``result`` (the study's
    Result.from_dict) decodes from the stored summary."""
    def deco(fn: Callable[[Campaign, Any, list[Measurement]], Section]):
        BUILDERS[study] = (result, fn)
        return fn

    return deco


def result_of(campaign: Campaign) -> Any:
    """The campaign's typed result, decoded from its stored summary by its study's
    Result.from_dict; None for a study with no section of its own, or a campaign without its
    result (still running, or stopped before its analysis: no summary, or an error alone)."""
    summary = campaign.summary or {}
    if campaign.study not in BUILDERS or not summary:
        return None
    try:
        return BUILDERS[campaign.study][0](summary)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def build_section(campaign: Campaign, measurements: list[Measurement]) -> Section:
    result = result_of(campaign)
    if result is None:  # what there is, shown generically
        return generic(campaign, campaign.summary or {})
    return BUILDERS[campaign.study][1](campaign, result, measurements)


def stored(summary: dict) -> dict:
    """A result's JSON form (its as_dict()) as the store keeps it (keys sorted, JSON's values): the
    generic view of a typed result."""
    return json.loads(dumps(summary))


def ci_dict(ci: Any) -> dict | None:
    """A CI as the report's helpers read it ({low, high, level}), None where there is none."""
    return None if ci is None else ci.as_dict()


def ratio_cell(ratio: float | None, ci: dict | None) -> str | None:
    """A ratio with the digits its interval needs to be told from 1 ('1.004', not '1')."""
    return None if ratio is None else ratio_figure(ratio, ci)


ENERGY_COLUMNS = ["J/run", "J/run CI", "J/event", "J/event CI"]


def add_energy(cols: list, rows: list[list], energies: list[dict | None]) -> str:
    """Joules per run and per event with their CIs as four more columns, where any row was
    measured; the note names the source (nothing is added where no energy was measured)."""
    if not any(energies):
        return ""
    cols.extend(ENERGY_COLUMNS)
    for row, e in zip(rows, energies):
        e = e or {}
        row.extend([e.get("joules_per_run"), ci_of(e.get("joules_per_run_ci")),
                    e.get("joules_per_event"), ci_of(e.get("joules_per_event_ci"))])
    sources = sorted({e["source"] for e in energies if e and e.get("source")})
    return f"energy: {'; '.join(sources)}; medians with order-statistic CIs at the level shown"


def finding(significant: bool | None, ratio: float | None, higher_is_better: bool | None) -> str:
    """A comparison's finding in the report's three words (plots.BETTER, WORSE, NOT_SIGNIFICANT):
    better or worse in the measure's own direction, only where the test says it differs."""
    if not significant or ratio is None:
        return plots.NOT_SIGNIFICANT
    if higher_is_better is None:  # no declared direction: a difference, neither better nor worse
        return plots.NOT_SIGNIFICANT
    return plots.BETTER if (ratio > 1) == bool(higher_is_better) else plots.WORSE


def levels(cis: Sequence[dict | None]) -> str:
    """The intervals' level for a legend: '96% CI', or '96-99% CIs' where they differ."""
    ls = sorted({round(100 * c["level"]) for c in cis if c and c.get("level")})
    if not ls:
        return ""
    return f"{ls[0]}% CI" if len(ls) == 1 else f"{ls[0]}-{ls[-1]}% CIs"
