"""Exports of a `perflab profile` result that other tools open: folded stacks, speedscope, CSV.

- folded: ``frame;frame;frame count`` per line, the input of Brendan Gregg's flamegraph.pl and
  of inferno-flamegraph; the counts are samples and sum to the windows' samples (callgrind:
  exclusive instructions per call path, summing to the recordings' Ir).
- speedscope: speedscope's file format (https://www.speedscope.app/file-format-schema.json), one
  "sampled" profile: every distinct stack once with its sample count as its weight, frames
  shared by index. It opens offline in speedscope (drag the file in, or ``speedscope FILE``).
- csv: the flat table (share, samples, symbol, shared object) as the terminal shows it.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from perflab.errors import PerflabError
from perflab.studies.profile.stacks import SEP, folded_lines
from perflab.studies.profile.study import ProfileResult

FORMATS = ("folded", "speedscope", "csv")
SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"


def _need_stacks(result: ProfileResult, fmt: str) -> None:
    if not result.stacks:
        raise PerflabError(f"--export {fmt} needs call stacks: record with --call-graph fp (or dwarf, "
                           "or lbr where the CPU has it)")


def folded_text(result: ProfileResult) -> str:
    _need_stacks(result, "folded")
    return folded_lines(result.stacks)


def speedscope(result: ProfileResult, name: str = "perflab profile") -> dict[str, Any]:
    """The windows' stacks as one speedscope "sampled" profile (unit: none, weights = samples)."""
    _need_stacks(result, "speedscope")
    frames: dict[str, int] = {}
    samples: list[list[int]] = []
    weights: list[int] = []
    for stack, count in sorted(result.stacks.items()):
        samples.append([frames.setdefault(f, len(frames)) for f in stack.split(SEP)])
        weights.append(count)
    total = sum(weights)
    return {
        "$schema": SPEEDSCOPE_SCHEMA,
        "shared": {"frames": [{"name": f} for f in frames]},
        "profiles": [{"type": "sampled", "name": f"{name}: {result.event}, {result.window}",
                      "unit": "none", "startValue": 0, "endValue": total,
                      "samples": samples, "weights": weights}],
        "name": name, "activeProfileIndex": 0, "exporter": "perflab",
    }


def csv_text(result: ProfileResult) -> str:
    """The flat table: perf's top functions, or callgrind's by exclusive count."""
    out = io.StringIO()
    w = csv.writer(out)
    if result.instrument == "callgrind":
        ev = (result.count_events or ["Ir"])[0]
        w.writerow(["share", f"{ev}_self", f"{ev}_inclusive", "symbol", "object"])
        for r in result.count_top:
            w.writerow([f"{r.share:.6f}", f"{r.self_[0]:.0f}", f"{r.incl[0]:.0f}", r.symbol, r.obj])
    else:
        w.writerow(["share", "samples", "symbol", "shared_object"])
        for t in result.top:
            w.writerow([f"{t.share:.6f}", t.samples, t.symbol, t.dso])
    return out.getvalue()


def export(result: ProfileResult, fmt: str, path: str) -> str:
    """Write one export; the line that says what was written."""
    if fmt == "folded":
        text = folded_text(result)
        unit = "instructions" if result.instrument == "callgrind" else "samples"
        what = f"{len(result.stacks)} folded stacks, {sum(result.stacks.values())} {unit}"
    elif fmt == "speedscope":
        doc = speedscope(result)
        text = json.dumps(doc)
        what = f"speedscope profile, {len(doc['shared']['frames'])} frames"
    elif fmt == "csv":
        text = csv_text(result)
        what = f"flat table, {text.count(chr(10)) - 1} rows"
    else:
        raise PerflabError(f"--export {fmt}: give one of {', '.join(FORMATS)}")
    try:
        with open(path, "w") as fh:
            fh.write(text)
    except OSError as exc:
        raise PerflabError(f"--export {fmt} {path}: cannot write it ({exc.strerror}); give a writable path") from None
    return f"{fmt}: {path} ({what})"
