"""`perflab profile`'s section (the top functions by samples or, under callgrind, by counted
instructions, and the flame graph) from the ProfileResult, and `perflab profile diff`'s (the
differential flame graph) from the ProfileDiffResult."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from perflab.report.flame import flame_box
from perflab.report.generic import builder, generic, stored
from perflab.report.model import Code, Plot, Section, Table
from perflab.report.numbers import plural
from perflab.studies.profile.diff import MAX_TESTED, MIN_TESTED_SHARE, ProfileDiffResult
from perflab.studies.profile.study import ProfileResult

if TYPE_CHECKING:
    from perflab.store import Campaign, Measurement


def _code(value: Any) -> Any:
    """A symbol or object name as code in the Markdown (None stays an em dash)."""
    return None if value is None else Code(value)


@builder("profile", ProfileResult.from_dict)
def profile_section(campaign: Campaign, result: ProfileResult, measurements: list[Measurement]) -> Section:
    sec = generic(campaign, {"verdict": result.message})
    counted = result.instrument == "callgrind"
    if counted:  # counts per function, not samples: the table perf's profile has would stay empty
        ev = (result.count_events or ["Ir"])[0]
        sec.tables = [Table(f"Top functions by exclusive {ev} (callgrind, mean per recording)",
                            ["share [%]", f"{ev} self", f"{ev} inclusive", "symbol", "object"],
                            [[100 * (r.share or 0), r.self_[0] if r.self_ else None, r.incl[0] if r.incl else None,
                              _code(r.symbol), _code(r.obj)] for r in result.count_top])]
    else:
        sec.tables = [Table(f"Top functions ({result.event})", ["share [%]", "samples", "symbol", "shared object"],
                            [[100 * (t.share or 0), t.samples, _code(t.symbol), _code(t.dso)] for t in result.top])]
    lat = result.enable_latency_us
    if lat and not counted:  # callgrind's is the time to a dump, not to enabled sampling
        sec.notes.append(f"marker-to-enabled latency: {', '.join(f'{x:.0f} us' for x in lat[:6])}")
    if result.event_reason:
        sec.notes.append(result.event_reason)
    for a in result.annotations:
        hint = " — front-end hint: samples pile on the first instructions" if a.front_end_hint else ""
        sec.notes.append(f"{a.symbol}: {100 * (a.head_share or 0):.0f} % of its samples on its "
                         f"{a.head_desc}{hint}")
    sec.verdict = result.window_sentence() or sec.verdict
    if result.flame:
        flame = stored(result.flame.as_dict())  # its keys in the stored order: the page's JSON as stored
        k, unit = result.flame.recordings, "instructions (Ir)" if counted else "samples"
        what = "exclusive instructions per call path, counted by callgrind" if counted else result.event
        legend = (f"Flame graph of {int(flame['root'].get('v', 0)):,} {unit} in {plural(k, 'recording')} ({what}): "
                  "a frame's width is its count with what it called, its callers below it; click a frame to zoom "
                  "in and list its callers and callees, search by regular expression; frames under "
                  f"{100 * result.flame.min_share:.1f} % left out"
                  + (f"; intervals: Student's t over the {k} recordings' shares, {100 * result.flame.level:.0f} %"
                     if k >= 2 else ""))
        sec.plots.append(Plot("Flame graph", flame_box(flame, str(sec.key), legend, {"unit": unit}), desc=legend))
    return sec


@builder("profile-diff", ProfileDiffResult.from_dict)
@builder("profile_diff", ProfileDiffResult.from_dict)  # the study name its campaigns are stored under
def profile_diff_section(campaign: Campaign, result: ProfileDiffResult, measurements: list[Measurement]) -> Section:
    sec = generic(campaign, stored(result.as_dict()))
    flame = result.flame
    if flame:
        a, b = result.a_label, result.b_label
        tested, counted = result.tested, result.instrument == "callgrind"
        test = "Welch's t on log exclusive counts" if counted else "Welch's t on shares"
        legend = (f"Differential flame graph: B's frames ({b}) at B's widths, coloured by the change of their "
                  f"inclusive share against A ({a}) (orange grew, blue shrank, deeper for more); outlined and "
                  "starred: the frames whose function's share differs by the table's test "
                  + (f"({test}, Holm at {100 * (result.alpha or 0.05):.0f} %)" if tested
                     else "(none: no test was possible)")
                  + "; dashed: only in B")
        untested = ("below its share, absent from a recording, or on one side only" if counted and tested else
                    f"under {MIN_TESTED_SHARE:.1%} of the period, or past the {MAX_TESTED} largest" if tested
                    else result.test_note)
        sec.plots.append(Plot("Differential flame graph", flame_box(
            flame, str(sec.key), legend, {"diff": True, "a_label": f"A ({a})", "b_label": f"B ({b})",
                                          "untested": untested, "unit": "instructions (Ir)" if counted else "samples"},
            result.flame_only), desc=legend))
    return sec
