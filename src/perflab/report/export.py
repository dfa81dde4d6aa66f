"""hyperfine-compatible exports of a `perflab run` result: JSON, CSV and Markdown.

Field and column names are hyperfine's (times in seconds); perflab only ADDS fields
(median_ci, relative, outliers, metrics, counters, energy, rusage), so tools reading hyperfine's
output read ours unchanged.
"""

from __future__ import annotations

import csv
import io
import json
import math

from perflab.report.terminal.run import time_unit
from perflab.studies.run.result import RunStudyResult, verdict


def _mean(xs):
    return sum(xs) / len(xs) if xs else None


def _clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def hyperfine_dict(result: RunStudyResult) -> dict:
    """``{"results": [...]}`` in hyperfine's --export-json schema, plus perflab's extras."""
    out = []
    for b in result.benchmarks:
        s = b.summary
        if not s:
            continue
        entry = {
            "command": b.command,
            "mean": s["mean"],
            "stddev": s["stddev"] if s["n"] > 1 else None,
            "median": s["median"],
            "user": _mean(b.user),
            "system": _mean(b.system),
            "min": s["min"],
            "max": s["max"],
            "times": b.times,
            "memory_usage_byte": [kb * 1024 for kb in b.maxrss_kb],
            "exit_codes": [0] * b.n,  # failed runs are listed under "failures", not timed
        }
        if b.params:
            entry["parameters"] = {k: str(v) for k, v in b.params.items()}
        # perflab's additions
        entry["median_ci"] = {k: _clean(v) for k, v in (b.median_ci or {}).items()}
        entry["relative"] = b.relative
        entry["outliers"] = b.outliers
        entry["failures"] = b.failures
        entry["suspect_runs"] = b.suspect
        entry["metrics"] = b.metric_medians()
        entry["metric_values"] = b.metrics
        if b.counters:
            entry["counters"] = b.counters
        if b.energy:
            entry["energy"] = b.energy  # J/run and J/event with their CIs, and the source
        entry["rusage"] = {"maxrss_kb": b.maxrss_kb, **b.rusage, "user": b.user, "system": b.system}
        out.append(entry)
    return {"results": out, "perflab": {"campaign_id": result.campaign_id,
                                       "warnings": result.warnings,
                                       "stopped_by": result.stopped_by,
                                       "failed_runs": result.failed_runs,
                                       "verdict": verdict(result)}}


def export_json(result, path: str) -> None:
    _write(path, json.dumps(hyperfine_dict(result), indent=2) + "\n")


def export_csv(result, path: str) -> None:
    """hyperfine's columns: command,mean,stddev,median,user,system,min,max[,parameter_X], then ours."""
    data = hyperfine_dict(result)["results"]
    params = sorted({k for e in data for k in e.get("parameters", {})})
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["command", "mean", "stddev", "median", "user", "system", "min", "max",
                *[f"parameter_{p}" for p in params], "median_ci_lo", "median_ci_hi",
                "relative", "max_memory_usage_byte"])
    for e in data:
        w.writerow([e["command"], e["mean"], e["stddev"] if e["stddev"] is not None else "",
                    e["median"], e["user"], e["system"], e["min"], e["max"],
                    *[e.get("parameters", {}).get(p, "") for p in params],
                    e["median_ci"].get("low"), e["median_ci"].get("high"),
                    e["relative"]["ratio"] if e["relative"] else 1.0,
                    max(e["memory_usage_byte"])])
    _write(path, buf.getvalue())


def export_markdown(result, path: str) -> None:
    """hyperfine's table (Command, Mean, Min, Max, Relative) plus a Median [95% CI] column."""
    data = hyperfine_dict(result)["results"]
    if not data:
        _write(path, "")
        return
    unit = time_unit(min(e["mean"] for e in data))
    unit = "ms" if unit == "µs" else unit  # hyperfine's markdown uses s or ms
    scale = 1.0 if unit == "s" else 1e3
    # hyperfine's Unit::format: seconds to 3 decimals, milliseconds to 1
    nd = 3 if unit == "s" else 1
    lines = [f"| Command | Mean [{unit}] | Min [{unit}] | Max [{unit}] | Relative | "
             f"Median [{unit}] ({_levels(data)} CI) |",
             "|:---|---:|---:|---:|---:|---:|"]
    fastest_median = min(e["median"] for e in data)
    for e in data:
        sd = e["stddev"] or 0.0
        rel = e["relative"]
        if rel is None or (rel["ratio"] == 1.0 and e["median"] == fastest_median):
            rel_s = "1.00"
        else:
            rel_s = f"{rel['ratio']:.2f} [{rel['low']:.2f}, {rel['high']:.2f}]"
        lo, hi = e["median_ci"].get("low"), e["median_ci"].get("high")
        lines.append(
            f"| `{e['command']}` | {e['mean'] * scale:.{nd}f} ± {sd * scale:.{nd}f} | "
            f"{e['min'] * scale:.{nd}f} | {e['max'] * scale:.{nd}f} | {rel_s} | "
            f"{e['median'] * scale:.{nd}f} [{(lo or 0) * scale:.{nd}f}, {(hi or 0) * scale:.{nd}f}] |")
    _write(path, "\n".join(lines) + "\n")


def _levels(data: list[dict]) -> str:
    """The CI level of the medians ('95%'; a range where small samples reached less)."""
    levels = sorted({round(e["median_ci"].get("level") or 0, 3) for e in data})
    return "/".join(f"{v:.0%}" for v in levels)


def _write(path: str, text: str) -> None:
    if path == "-":
        import sys

        sys.stdout.write(text)
        return
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
