"""What `perflab results` shows: campaigns as rows, a campaign's runs grouped by configuration."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from perflab.platform import owner
from perflab.report.verdicts import VERDICTS
from perflab.stats import median
from perflab.store import Campaign, Measurement, canonical_params


@dataclass(frozen=True)
class RunGroup:
    """The runs of one (label, params) configuration of a campaign."""

    label: str
    params: dict
    n: int
    failed: int
    wall_median_s: float | None
    wall_min_s: float | None
    wall_max_s: float | None
    maxrss_median_kb: float | None
    metrics: dict[str, float] = field(default_factory=dict)  # metric name -> median


def group_measurements(measurements: Sequence[Measurement]) -> list[RunGroup]:
    """Group runs by (label, params) in first-seen order; medians over the successful runs."""
    groups: dict[tuple[str, str], list[Measurement]] = {}
    for m in measurements:
        groups.setdefault((m.label, canonical_params(m.params)), []).append(m)
    out = []
    for (label, _), ms in groups.items():
        ok = [m.result for m in ms if m.result.ok]
        walls = [r.wall_s for r in ok]
        names = sorted({k for r in ok for k in r.metrics})
        metrics = {}
        for name in names:
            values = [r.metrics[name] for r in ok if name in r.metrics]
            metrics[name] = median(values)
        out.append(RunGroup(
            label=label, params=ms[0].params, n=len(ms), failed=len(ms) - len(ok),
            wall_median_s=median(walls) if walls else None,
            wall_min_s=min(walls) if walls else None, wall_max_s=max(walls) if walls else None,
            maxrss_median_kb=median([r.maxrss_kb for r in ok]) if ok else None, metrics=metrics,
        ))
    return out


def campaign_row(c: Campaign) -> dict:
    """A campaign as a JSON-able dict (what `perflab results --json` writes)."""
    duration = (c.finished - c.started).total_seconds() if c.finished else None
    summary = c.summary if isinstance(c.summary, dict) else {}
    verdict = summary.get("verdict") or (VERDICTS[c.study](summary) if c.study in VERDICTS and summary else None)
    return {
        "id": c.id, "study": c.study, "name": c.name, "status": c.status,
        "measurements": c.n_measurements, "started": c.started.isoformat(timespec="seconds"),
        "finished": c.finished.isoformat(timespec="seconds") if c.finished else None,
        "duration_s": duration, "parent_id": c.parent_id, "host_id": c.host_id, "verdict": verdict,
        # A running campaign's perflab: True while it runs, False once it is gone (killed before
        # it could close the campaign), None where this machine cannot tell (platform/owner.py).
        "owner_alive": owner.alive(c.labels.get("owner")) if c.status == "running" else None,
        "owner_pid": (c.labels.get("owner") or {}).get("pid"),
    }


def shown_status(row: dict) -> str:
    """The status a listing shows: 'died' for a campaign left running by a perflab that is gone."""
    return owner.shown_status(row["status"], row["owner_alive"])


def died_note(row: dict) -> str | None:
    """The line that says what 'died' means and what to do, for such a campaign."""
    if shown_status(row) != "died":
        return None
    return (f"note: campaign {row['id']} is marked running, but the perflab that measured it (pid "
            f"{row['owner_pid']}) is gone: killed, or the machine restarted. 'perflab resume "
            f"{row['id']}' finishes it")
