"""A command's per-event series in a terminal: the steady rate beside the whole-run rate, the
warm-up, per-event quantiles with their intervals, the slowest events and what would profile one."""

from __future__ import annotations

from typing import Any

from perflab.studies.run.series import SeriesSummary


def lines(command: str, s: SeriesSummary, workload: str | None = None) -> list[str]:
    """The section as plain lines (terminal and Markdown print the same words)."""
    out = []
    ci = s.steady_ci
    runs = f"{s.runs} run{'s' if s.runs != 1 else ''}"
    interval = (f" [{ci['low']:.4g}, {ci['high']:.4g}] ({ci['level']:.0%} CI, {s.clusters} as clusters"
                + ("; it sees the events' variation, not the machine's from run to run: --runs 3 or more "
                   "for that)" if s.clusters == "batches" else ")")
                if ci else " (no interval: one run too short to batch)")
    out.append(f"{command}: steady {s.steady_rate:.4g} events/s{interval}; whole run {s.run_rate:.4g} "
               f"events/s (start-up included), {s.events:g} events a run, {runs}")
    if s.warmup_how == "skip":
        out.append(f"  warm-up: the first {s.warmup[0]} events of each run (--skip-events)")
    elif any(s.warmup):
        cut = ", ".join(str(w) for w in s.warmup)
        out.append(f"  warm-up: the event rate changes after events {cut} of the runs (change point, "
                   "1 % permutation test, >= 10 % slower before it); left out of the steady rate and the tail")
    elif s.lone_warmup:
        at = ", ".join(str(w) for w in s.lone_warmup)
        out.append(f"  warm-up: none cut; a change point in {len(s.lone_warmup)} of {s.runs} runs only (after "
                   f"event {at}) is taken as the machine disturbing that run, not the job warming up (a "
                   "warm-up recurs in every run)")
    else:
        out.append("  warm-up: none found (no change point with the start >= 10 % slower at 1 %)")
    if s.slows or s.speeds_up:
        d = s.drift or {}
        what = "falls" if s.slows else "rises"
        out.append(f"  not steady: the rate {what} to {d['ratio']:.3g}x [{d['low']:.3g}, {d['high']:.3g}] "
                   f"({d['level']:.0%} CI) from the first to the second half of the steady part; the steady "
                   "rate is an average over a moving rate"
                   + ("" if s.slows else " (a warm-up longer than found? give --skip-events K)"))
    q = s.quantiles
    cells = []
    for name in ("p50", "p90", "p99"):
        v = q.get(name)
        if v:
            cells.append(f"{name} {v['value']:.4g} ms [{v['low']:.4g}, {v['high']:.4g}] ({v['level']:.0%})")
    out.append(f"  per-event time (ms, over {s.over}): " + "; ".join(cells) + f"; max {s.max_ms:.4g} ms")
    if s.slowest:
        top = s.slowest[0]
        if top["slowest_in"] > 1:
            kind = ("a heavy event, not a slow moment" if top["slowest_in"] * 2 > s.runs
                    else "in more than one run: heavier than most")
            others = "".join(f"; event {e['event']} in {e['slowest_in']}" for e in s.slowest[1:])
            out.append(f"  event {top['event']} is slowest in {top['slowest_in']} of {s.runs} runs "
                       f"({top['ms']:.4g} ms): {kind}{others}")
        elif s.runs == 1:
            out.append(f"  event {top['event']} is the slowest ({top['ms']:.4g} ms); one run cannot tell a heavy "
                       "event from a slow moment: give --runs 3 or more")
        else:
            names = ", ".join(str(e["event"]) for e in s.slowest)
            out.append(f"  the slowest event differs run to run ({names}): "
                       + ("slow moments rather than heavy events" if s.runs >= 3
                          else "cannot tell a heavy event from a slow moment with fewer than 3 runs"))
        if workload:
            out.append(f"  profile it: perflab profile -w {workload} --event {top['event']}")
    return out


def render(rows: list[tuple[str, SeriesSummary]], console: Any, workload: str | None = None) -> None:
    for command, s in rows:
        for ln in lines(command, s, workload):
            console.print(ln, highlight=False, markup=False)
