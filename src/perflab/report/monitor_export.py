"""The monitor's samples exported: CSV with one row a sample and one column a quantity (per CPU,
per RAPL domain, per GPU), JSON with the samples as stored and their summary."""

from __future__ import annotations

import csv
import datetime as _dt
import io
from typing import Any, Sequence

from perflab.studies.monitor import MonitorResult

SCALARS = ("busy", "steal", "pressure_cpu", "pressure_memory", "pressure_io", "load1", "runnable",
           "mem_used_gib", "swap_used_gib", "ipmi_w")
GPU_COLUMNS = ("power_w", "util_pct", "mem_util_pct", "mem_used_mib", "temp_c", "sm_mhz")


def _flat(sample: dict[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {k: sample.get(k) for k in SCALARS if k in sample}
    freqs = sample.get("freq_mhz") or {}
    if freqs:
        row["freq_mhz_mean"] = round(sum(freqs.values()) / len(freqs), 1)
        row["freq_mhz_min"] = min(freqs.values())
        row.update({f"cpu{c}_mhz": v for c, v in freqs.items()})
    row.update({f"rapl_{k.replace('/', '_')}_w": w for k, w in (sample.get("rapl_w") or {}).items()})
    for g in sample.get("gpus") or ():
        row.update({f"gpu{g['index']}_{k}": g.get(k) for k in GPU_COLUMNS})
    return row


def monitor_csv(rows: Sequence[dict[str, Any]]) -> str:
    """One line a sample: UTC time, seconds since the first sample, phase, then every quantity
    any sample had (empty where a sample lacks it)."""
    samples = [r for r in rows if r["phase"] != "sources"]
    flat = [_flat(r["sample"]) for r in samples]
    columns: list[str] = []
    for f in flat:
        columns.extend(k for k in f if k not in columns)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["utc", "t_s", "phase", *columns])
    t0 = samples[0]["t_ns"] if samples else 0
    for r, f in zip(samples, flat):
        utc = _dt.datetime.fromtimestamp(r["wall"], _dt.timezone.utc).isoformat(timespec="milliseconds")
        writer.writerow([utc, f"{(r['t_ns'] - t0) / 1e9:.3f}", r["phase"], *("" if f.get(c) is None else f[c] for c in columns)])
    return out.getvalue()


def monitor_json(campaign_id: int, rows: Sequence[dict[str, Any]], result: MonitorResult) -> dict[str, Any]:
    """The samples as stored (t_ns on the runs' monotonic clock, wall in Unix seconds) and their summary."""
    return {"campaign": campaign_id, "summary": result.as_dict(),
            "samples": [r for r in rows if r["phase"] != "sources"],
            "sources": [r["sample"] for r in rows if r["phase"] == "sources"]}
