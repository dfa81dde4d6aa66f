"""hyperfine-compatible exports of a `perflab run` result: JSON, CSV and Markdown.

Field and column names are hyperfine's (times in seconds); perflab only ADDS fields
(median_ci, relative, outliers, metrics, counters, rusage), so tools reading hyperfine's
output read ours unchanged.
"""

from __future__ import annotations

import csv
import io
import json
import math


def _mean(xs):
    return sum(xs) / len(xs) if xs else None


def _clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def hyperfine_dict(result) -> dict:
    """``{"results": [...]}`` in hyperfine's --export-json schema, plus perflab's extras."""
    from perflab.studies.run import metric_medians

    out = []
    for b in result.benchmarks:
        if not b.results:
            continue
        s = b.summary
        rs = b.results
        entry = {
            "command": b.command,
            "mean": s.mean,
            "stddev": s.stddev if s.n > 1 else None,
            "median": s.median,
            "user": _mean([r.user_s for r in rs]),
            "system": _mean([r.sys_s for r in rs]),
            "min": s.min,
            "max": s.max,
            "times": b.times,
            "memory_usage_byte": [r.maxrss_kb * 1024 for r in rs],
            "exit_codes": [r.exit_code for r in rs],
        }
        if b.params:
            entry["parameters"] = {k: str(v) for k, v in b.params.items()}
        # perflab's additions
        entry["median_ci"] = [_clean(b.median_ci[0]), _clean(b.median_ci[1])]
        entry["relative"] = list(b.relative) if b.relative else None
        entry["outliers"] = b.outliers
        entry["metrics"] = metric_medians(b)
        entry["metric_values"] = {k: [r.metrics.get(k) for r in rs]
                                  for k in sorted({k for r in rs for k in r.metrics})}
        counters = sorted({k for r in rs for k in r.counters})
        if counters:
            entry["counters"] = {k: [r.counters.get(k) for r in rs] for k in counters}
        entry["rusage"] = {
            "maxrss_kb": [r.maxrss_kb for r in rs],
            "minflt": [r.minflt for r in rs],
            "majflt": [r.majflt for r in rs],
            "nvcsw": [r.nvcsw for r in rs],
            "nivcsw": [r.nivcsw for r in rs],
            "user": [r.user_s for r in rs],
            "system": [r.sys_s for r in rs],
            "signals": [r.signal for r in rs],
        }
        out.append(entry)
    return {"results": out, "perflab": {"campaign_id": result.campaign_id,
                                       "warnings": result.warnings,
                                       "stopped_by": result.stopped_by}}


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
                    e["median_ci"][0], e["median_ci"][1],
                    e["relative"][0] if e["relative"] else 1.0,
                    max(e["memory_usage_byte"])])
    _write(path, buf.getvalue())


def export_markdown(result, path: str) -> None:
    """hyperfine's table (Command, Mean, Min, Max, Relative) plus a Median [95% CI] column."""
    data = hyperfine_dict(result)["results"]
    if not data:
        _write(path, "")
        return
    from perflab.studies.run import time_unit

    unit = time_unit(min(e["mean"] for e in data))
    unit = "ms" if unit == "µs" else unit  # hyperfine's markdown uses s or ms
    scale = 1.0 if unit == "s" else 1e3
    lines = [f"| Command | Mean [{unit}] | Min [{unit}] | Max [{unit}] | Relative | "
             f"Median [{unit}] (95% CI) |",
             "|:---|---:|---:|---:|---:|---:|"]
    fastest_median = min(e["median"] for e in data)
    for e in data:
        sd = e["stddev"] or 0.0
        rel = e["relative"]
        if rel is None or (rel[0] == 1.0 and e["median"] == fastest_median):
            rel_s = "1.00"
        else:
            rel_s = f"{rel[0]:.2f} [{rel[1]:.2f}, {rel[2]:.2f}]"
        lo, hi = e["median_ci"]
        lines.append(
            f"| `{e['command']}` | {e['mean'] * scale:.1f} ± {sd * scale:.1f} | "
            f"{e['min'] * scale:.1f} | {e['max'] * scale:.1f} | {rel_s} | "
            f"{e['median'] * scale:.1f} [{(lo or 0) * scale:.1f}, {(hi or 0) * scale:.1f}] |")
    _write(path, "\n".join(lines) + "\n")


def _write(path: str, text: str) -> None:
    if path == "-":
        import sys

        sys.stdout.write(text)
        return
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
