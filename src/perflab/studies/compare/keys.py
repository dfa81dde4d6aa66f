"""What two campaigns of one study kind have in common: design keys and per-key samples.

A measurement's params mix the study's design (which CPU, how many copies, which build) with
incidental facts of the run (round, copy index, the copies' start spread, the CPU list a
policy happened to choose). Two campaigns are matched on the design alone, so that a rerun
of the same study on the same or another machine lines up point by point.

Concurrent studies (instances) store one measurement per copy; the copies of one point in
one round are one observation of that point, so they are aggregated per round before any
statistics (wall time: the makespan; max RSS: the largest copy; user time: the sum; a
workload metric: the median copy, never a sum of per-copy rates).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from perflab.measure import cachegrind
from perflab.errors import PerflabError
from perflab.stats import median
from perflab.studies.cost.energy import run_joules

# Study kind -> the params that say which point of the design a measurement belongs to.
# "run" has no fixed list: its key is the command label plus every scan parameter.
DESIGN_KEYS: dict[str, tuple[str, ...]] = {
    "cores": ("cpu",),
    "instances": ("policy", "n"),
    "instances-fork": ("mode", "n"),
    "variants": ("variant",),
    "frontend": ("kind", "bytes", "mode"),
    "micro": ("bench", "abi"),
    "footprint": ("mode",),
    "bundle": ("mode",),
    "bundle-verify": ("mode",),
}
# Params that describe a run, never a point of the design: left out of the key of a study kind
# that has no entry above.
INCIDENTAL = frozenset({"rep", "round", "order", "copy", "master", "start_spread_ns", "cpus",
                        "mem_node", "node", "workers", "warmup"})
# Study kinds whose measurements are copies of one concurrent point (aggregated per round).
CONCURRENT = frozenset({"instances"})

MEASURE_NAMES = {"wall_s": "wall time [s]", "maxrss_kb": "max RSS [KiB]", "user_s": "user time [s]",
                 "energy_j": "energy [J]", "energy_per_event_j": "energy per event [J]"}


@dataclass(frozen=True)
class Point:
    """One design point of a campaign: its key, a readable form, and the study kind it is of."""

    key: tuple[tuple[str, str], ...]
    text: str


def design_key(study: str, label: str, params: dict[str, Any]) -> Point:
    """The design point a measurement belongs to (see DESIGN_KEYS)."""
    kind = study
    if study == "instances" and "mode" in params and "policy" not in params:
        kind = "instances-fork"
    names = DESIGN_KEYS.get(kind)
    if study == "run":
        # The label is the command with its parameters substituted; the params say which.
        items = tuple(sorted((str(k), _text(v)) for k, v in params.items() if k not in INCIDENTAL))
        key = (("command", label),) + items
        text = label + "".join(f" {k}={v}" for k, v in items if f"{v}" not in label)
        return Point(key, text)
    if names is None:
        items = tuple(sorted((str(k), _text(v)) for k, v in params.items() if k not in INCIDENTAL))
        key = (("label", label),) + items
        return Point(key, " ".join([label] + [f"{k}={v}" for k, v in items]).strip())
    key = tuple((k, _text(params.get(k))) for k in names)
    if params.get("instrument"):  # a simulated run of a point (variants) is a point of its own
        key += (("instrument", _text(params["instrument"])),)
    prefix = "fork " if kind == "instances-fork" else ""
    return Point(key, prefix + " ".join(f"{k}={v}" for k, v in key))


def _text(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def energy_j(result: Any) -> float | None:
    """A run's joules, counted as everywhere else (perflab.studies.cost.energy.run_joules)."""
    return run_joules(result) if getattr(result, "energy", None) else None


def observation(results: list[Any]) -> dict[str, float]:
    """Measures of one observation: one run, or the copies of one concurrent point and round."""
    out = {
        "wall_s": max(r.wall_ns for r in results) / 1e9,
        "maxrss_kb": float(max(r.maxrss_kb for r in results)),
        "user_s": float(sum(r.user_s for r in results)),
    }
    energies = [e for e in (energy_j(r) for r in results) if e is not None]
    if energies:
        # Concurrent copies read the same package counters over one window: the largest is the
        # point's energy; summing them would count the package once per copy.
        out["energy_j"] = max(energies)
        events = [(r.metrics or {}).get("events") for r in results]
        if all(isinstance(e, (int, float)) and e > 0 for e in events):
            # the point's joules over all its copies' events, as instances counts joules per unit
            out["energy_per_event_j"] = out["energy_j"] / sum(e for e in events if e is not None)
    names = set.intersection(*(set(r.metrics or {}) for r in results))
    for k in sorted(names):
        vals = [r.metrics[k] for r in results if isinstance(r.metrics.get(k), (int, float))]
        if len(vals) == len(results) and "checksum" not in k:
            out[f"metric:{k}"] = float(median(vals))
    return out


def series(study: str, measurements: Iterable[Any]) -> tuple[dict[tuple, dict[str, list[float]]], dict[tuple, str]]:
    """Per design point, the samples of every measure; failed runs are left out.

    Returns (samples by key, readable text by key).
    """
    groups: dict[tuple, dict[int, list[Any]]] = {}
    texts: dict[tuple, str] = {}
    for m in measurements:
        if not m.result.ok:
            continue
        p = design_key(study, m.label, m.params or {})
        texts[p.key] = p.text
        # One observation per run, or per round for the copies of a concurrent point.
        obs = m.rep if study in CONCURRENT else m.id
        groups.setdefault(p.key, {}).setdefault(obs, []).append(m.result)
    out: dict[tuple, dict[str, list[float]]] = {}
    for key, by_obs in groups.items():
        g = out.setdefault(key, {})
        for obs in sorted(by_obs):
            for name, v in observation(by_obs[obs]).items():
                g.setdefault(name, []).append(v)
    return out, texts


def measure_title(measure: str) -> str:
    """A measure's display name: 'wall time [s]', 'events_per_s'."""
    return MEASURE_NAMES.get(measure, measure.removeprefix("metric:"))


def higher_is_better(measure: str, config: dict | None = None) -> bool | None:
    """Whether a larger value of this measure is better: times, memory and energy never; the
    primary metric as the campaign recorded it; any other metric: None (not declared). A
    direction is never guessed from a metric's name: an encoder's fps is no `_per_s`."""
    if not measure.startswith("metric:"):
        return False
    if (config or {}).get("instrument") == "cachegrind" and measure[7:] in cachegrind.ALL_MEASURES:
        return False  # the instrument's counts are costs, declared by perflab, not guessed
    primary, hib = primary_metric(config or {})
    if primary == measure.removeprefix("metric:"):
        return hib
    return None


def primary_metric(config: dict) -> tuple[str | None, bool | None]:
    """(primary metric, higher is better) recorded in a campaign's config, where it says.

    `run` records both at the top of its config; the other studies inside their "workload".
    A campaign that names a primary metric but records no direction (a `run` campaign stored
    before run recorded it) gives None: unknown, not guessed."""
    for where in (config, config.get("workload") if isinstance(config.get("workload"), dict) else None):
        if where and where.get("primary_metric"):
            hib = where.get("higher_is_better")
            return str(where["primary_metric"]), (None if hib is None else bool(hib))
    return None, None


def directed(config: dict, name: str | None, hib: bool | None, campaign_id: int) -> dict:
    """A campaign's config with the primary metric and direction given on the command line over
    the recorded ones (compare --primary-metric / --higher-is-better / --lower-is-better)."""
    if name is None and hib is None:
        return config
    recorded, recorded_hib = primary_metric(config)
    metric = name or recorded
    if metric is None:
        flag = "--higher-is-better" if hib else "--lower-is-better"
        raise PerflabError(f"{flag} needs a metric: campaign {campaign_id} records no primary metric; "
                           "give --primary-metric NAME (wall time is always lower-is-better)")
    if hib is None:
        # as for a workload: a metric named without a direction is higher-is-better
        hib = recorded_hib if metric == recorded else True
    return {**config, "primary_metric": metric, "higher_is_better": hib}
