"""A stored campaign's sentence where its summary keeps none: what the listing (`perflab results`)
and the report print. Light on purpose: the listing imports it, and the HTML sections (jinja2,
the plots) would add about 140 ms to every `perflab results`."""

from __future__ import annotations

from perflab.report.numbers import plural
from perflab.studies.micro.study import MicroResult


def instances_verdict(summary: dict) -> str:
    """The study's own answer where its summary has one; an older summary's most throughput."""
    if summary.get("verdict"):
        # the optimum is not the highest median: the study's sentence says what it is and why
        return f"Answer: {summary['verdict']}"
    scans = summary.get("scans") or []
    if not scans:
        return ""
    best = max(scans, key=lambda s: s.get("optimum_throughput") or 0)
    return (f"Most throughput: {summary.get('optimum_throughput') or 0:.4g} {summary.get('unit', 'throughput')} "
            f"with {plural(summary.get('optimum_n'), 'copy')} (policy {summary.get('optimum_policy')}); "
            f"{plural(best.get('within_1pct_n'), 'copy')} already give 99 % of it.")


def micro_verdict(summary: dict) -> str:
    """The micro study's sentence (MicroResult.verdict) for a stored summary, which keeps none."""
    return MicroResult.from_dict(summary).verdict()


# The studies whose stored summary has no "verdict" of its own: the sentence from the summary.
VERDICTS = {"instances": instances_verdict, "micro": micro_verdict}
