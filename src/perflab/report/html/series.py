"""The per-event series of `perflab run` in the HTML and Markdown report: a table of the steady
rate, warm-up and tail per command (the terminal's numbers, from the same SeriesSummary), the
event rate over time per run beside the steady rate, and the per-event time's ECDF."""

from __future__ import annotations

from perflab.report import plots
from perflab.report.generic import _plot
from perflab.report.model import Section, Table
from perflab.report.numbers import ci_of
from perflab.studies.run.result import Benchmark
from perflab.studies.run.series import SeriesSummary

TITLE = "Per-event series: steady rate, warm-up and tail per command"


def add_series(sec: Section, benches: list[Benchmark]) -> None:
    """The series table and its two plots, where any command's runs had a series."""
    found = [(b.command, SeriesSummary.from_dict(b.series)) for b in benches if b.series]
    if not found:
        return
    rows = []
    for command, s in found:
        q = s.quantiles
        slow = s.slowest[0] if s.slowest else None
        rows.append([command, s.runs, ", ".join(map(str, s.warmup)) + (" (--skip-events)" if s.warmup_how == "skip" else ""),
                     s.steady_rate, ci_of(s.steady_ci, estimate=s.steady_rate) if s.steady_ci else None, s.run_rate,
                     q["p50"]["value"], ci_of(q["p50"], estimate=q["p50"]["value"]),
                     q["p99"]["value"], ci_of(q["p99"], estimate=q["p99"]["value"]), s.max_ms,
                     f"{slow['event']} (slowest in {slow['slowest_in']} of {s.runs})" if slow else None,
                     _steadiness(s)])
    cols = ["command", "runs", "warm-up [events]", "steady [events/s]", "CI", "whole run [events/s]",
            "p50 [ms]", "CI", "p99 [ms]", "CI", "max [ms]", "slowest event", "steady?"]
    sec.tables.append(Table(TITLE, cols, rows, note=(
        "steady: events after the warm-up over their time (runs as clusters from 3 runs, else 10 batches "
        "a run, which see event-to-event variation only); quantiles: order-statistic intervals at the "
        f"level shown, over {found[0][1].over}")))
    # The ignores: mypy cannot type a lambda whose defaults bind the loop's values (made with none).
    for command, s in found:
        runs = {f"run {i + 1}": ([p[0] for p in pts], [p[1] for p in pts]) for i, pts in enumerate(s.rate_over_time)}
        _plot(sec, f"{command}: event rate over time, per run", lambda runs=runs, s=s: plots.lines(  # type: ignore[misc]  # see above
            runs, xlabel="seconds since the run started", ylabel="events/s", zero=True,
            hline=("steady rate", s.steady_rate)), source=TITLE, column="steady [events/s]", unit="events/s")
        _plot(sec, f"{command}: per-event time, empirical CDF", lambda s=s: plots.lines(  # type: ignore[misc]  # see above
            {command[:30]: ([p[0] for p in s.ecdf], [p[1] for p in s.ecdf])},
            xlabel="ms per event", ylabel="share of events at or below", logx=s.max_ms > 20 * s.quantiles["p50"]["value"]),
            source=TITLE, column="p50 [ms]", unit="ms")


def _steadiness(s: SeriesSummary) -> str:
    if s.slows:
        return "no: the rate falls through the run"
    if s.speeds_up:
        return "no: the rate still rises"
    return "yes" if s.drift else "cannot tell (too few events)"
