"""The regression gate: a campaign against a named baseline, failing only on a real change.

A measure fails its threshold (``--fail-if 'median>+3%'``) only when both hold:
  * the change of the median, B against the baseline A, is beyond the threshold, and
  * the change is significant: Holm-adjusted two-sided Mann-Whitney p below alpha and the
    bootstrap CI of B/A (level 1 - alpha) excluding 1 on the side of the threshold.
So noise alone, however large, never fails a pipeline, and a significant change too small to
matter does not either. What a pass does not show: that nothing changed (a change hidden in
noise passes; the line says how wide the CI was).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from perflab.errors import PerflabError
from perflab.studies.compare import CompareResult, CompareRow, check_same_kind, compare_measurements
from perflab.studies.compare_keys import measure_title, primary_metric, series

DEFAULT_FAIL_IF = "median>+5%"
DEFAULT_ALPHA = 0.05

_ALIASES = {"median": "wall_s", "wall": "wall_s", "time": "wall_s", "wall_s": "wall_s",
            "rss": "maxrss_kb", "maxrss": "maxrss_kb", "memory": "maxrss_kb", "maxrss_kb": "maxrss_kb",
            "energy": "energy_j", "energy_j": "energy_j",
            "energy_per_event": "energy_per_event_j", "energy_per_event_j": "energy_per_event_j",
            "jpe": "energy_per_event_j",
            # CPU time: steadier than wall time on a shared runner, blind to waiting and I/O.
            "user": "user_s", "cpu": "user_s", "user_s": "user_s"}
# Absolute thresholds: unit -> (measure it fits, factor to the stored unit).
_UNITS = {
    "wall_s": {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0},
    "user_s": {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0},
    "maxrss_kb": {"kib": 1.0, "mib": 1024.0, "gib": 1024.0 ** 2, "kb": 1000 / 1024,
                  "mb": 1e6 / 1024, "gb": 1e9 / 1024},
    "energy_j": {"mj": 1e-3, "j": 1.0, "kj": 1e3},
    "energy_per_event_j": {"uj": 1e-6, "µj": 1e-6, "mj": 1e-3, "j": 1.0},
}
_EXPR = re.compile(r"\s*([A-Za-z_][\w.:-]*)\s*([<>])\s*(\S.*?)\s*")
_VALUE = re.compile(r"([+-])(\d+(?:\.\d*)?|\.\d+)\s*([A-Za-zµ%]*)")


@dataclass(frozen=True)
class Threshold:
    """One --fail-if condition: measure, direction, and a relative or absolute limit."""

    text: str
    name: str  # as the user wrote it
    op: str  # ">" (fail on an increase) or "<" (fail on a decrease)
    value: float  # signed: a relative share (0.03) or an absolute change in the stored unit
    relative: bool

    def measure(self, primary: str | None) -> str:
        """The compared measure this threshold reads ('wall_s', 'metric:events_per_s')."""
        if self.name in _ALIASES:
            return _ALIASES[self.name]
        if self.name == "primary":
            return f"metric:{primary}" if primary else "metric:"
        return "metric:" + self.name.removeprefix("metric:")

    def beyond(self, row: CompareRow) -> bool:
        """Whether the row's change of the median passes the limit in the threshold's direction."""
        change = row.ratio - 1.0 if self.relative else row.median_b - row.median_a
        return change > self.value if self.op == ">" else change < self.value

    def significant_side(self, row: CompareRow) -> bool:
        """Significant, with the CI of B/A on the threshold's side of 1."""
        return row.significant and (row.lo > 1.0 if self.op == ">" else row.hi < 1.0)


def parse_threshold(text: str) -> Threshold:
    """Parse 'median>+3%', 'rss>+10MiB', 'events_per_s<-2%' (syntax only; see check_measures)."""
    m = _EXPR.fullmatch(text or "")
    example = "write it like 'median>+3%' (relative) or 'median>+2ms' (absolute)"
    if not m:
        raise PerflabError(f"--fail-if {text!r} does not parse: {example}")
    name, op, raw = m.groups()
    v = _VALUE.fullmatch(raw)
    if not v:
        raise PerflabError(f"--fail-if {text!r}: threshold {raw!r} needs a sign and a unit: {example}")
    sign, number, unit = v.groups()
    if (op == ">") != (sign == "+"):
        raise PerflabError(f"--fail-if {text!r}: '>' takes an increase (+N) and '<' a decrease (-N): "
                           f"write {name}>+{number}{unit} or {name}<-{number}{unit}")
    value = float(number) * (1 if sign == "+" else -1)
    if unit == "%":
        return Threshold(text, name, op, value / 100, True)
    measure = _ALIASES.get(name)
    units = _UNITS.get(measure or "")
    if units is None:
        if unit:
            raise PerflabError(f"--fail-if {text!r}: a metric's absolute threshold is in the metric's "
                               f"own unit, without a suffix: write {name}{op}{sign}{number} or use %")
        return Threshold(text, name, op, value, False)
    factor = units.get(unit.lower()) if unit else None
    if factor is None:
        raise PerflabError(f"--fail-if {text!r}: {name} needs a relative threshold (%) or one of the "
                           f"units {', '.join(u for u in units if u != 'µs')}: {example}")
    return Threshold(text, name, op, value * factor, False)


@dataclass(frozen=True)
class GateConfig:
    """What the gate compares and how strictly (typed at the CLI edge)."""

    baseline: str
    campaign: int
    thresholds: tuple[Threshold, ...]
    alpha: float = DEFAULT_ALPHA
    cross_machine: bool = False
    seed: int = 0


@dataclass
class GateLine:
    """One compared measure of one design point, and what the gate made of it."""

    row: CompareRow
    thresholds: list[Threshold]
    failed: bool = False
    verdict: str = ""

    @property
    def status(self) -> str:
        return "FAIL" if self.failed else ("pass" if self.thresholds else "info")

    def text(self, m: int) -> str:
        r = self.row
        return (f"{self.status:4} {measure_title(r.measure)} of {r.key}: {100 * r.change:+.1f} % "
                f"(median {r.median_a:.4g} -> {r.median_b:.4g}), B/A {r.ratio:.4f} "
                f"[{r.lo:.4f}, {r.hi:.4f}] {100 * r.level:.0f}% CI, p={r.p_adjusted:.2g} "
                f"(Holm over {m}); {self.verdict}")

    def as_dict(self) -> dict[str, Any]:
        return {"status": self.status, "verdict": self.verdict,
                "thresholds": [t.text for t in self.thresholds], **self.row.as_dict()}


@dataclass
class GateResult:
    baseline: str
    compare: CompareResult
    lines: list[GateLine] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    hosts: tuple[str, str] = ("", "")

    @property
    def failed(self) -> bool:
        return any(ln.failed for ln in self.lines)

    @property
    def summary(self) -> str:
        gated = [ln for ln in self.lines if ln.thresholds]
        bad = [ln for ln in gated if ln.failed]
        what = (f"campaign {self.compare.b} against baseline '{self.baseline}' "
                f"(campaign {self.compare.a}), alpha {self.compare.alpha:g}")
        if bad:
            return (f"gate: FAIL: {len(bad)} of {len(gated)} gated comparisons changed beyond "
                    f"their threshold and significantly; {what}")
        return (f"gate: pass: none of {len(gated)} gated comparisons changed beyond its threshold "
                f"significantly; {what}")

    def as_dict(self) -> dict[str, Any]:
        return {"baseline": self.baseline, "baseline_campaign": self.compare.a,
                "campaign": self.compare.b, "study": self.compare.study_b,
                "alpha": self.compare.alpha, "failed": self.failed, "summary": self.summary,
                "hosts": {"baseline": self.hosts[0], "campaign": self.hosts[1]},
                "lines": [ln.as_dict() for ln in self.lines], "warnings": self.warnings,
                "unmatched_baseline": self.compare.unmatched_a,
                "unmatched_campaign": self.compare.unmatched_b}


def baseline_measures(store: Any, name: str) -> tuple[Any, set[str], str | None]:
    """(baseline campaign, the measures it has, its primary metric)."""
    b = store.baseline(name)
    camp = store.campaign(b.campaign_id)
    samples, _ = series(camp.study, store.measurements(camp.id))
    have = {m for per_key in samples.values() for m in per_key}
    return camp, have, primary_metric(camp.config)[0]


def check_measures(thresholds: Sequence[Threshold], have: set[str], primary: str | None) -> None:
    """Refuse a threshold on a measure the baseline does not have (one line, before any run)."""
    for t in thresholds:
        measure = t.measure(primary)
        if measure not in have:
            offer = ["median (wall time)", "user (CPU time)", "rss (max RSS)"]
            offer += ["energy"] if "energy_j" in have else []
            offer += ["energy_per_event"] if "energy_per_event_j" in have else []
            offer += sorted(m.removeprefix("metric:") for m in have if m.startswith("metric:"))
            why = ("the baseline has no primary metric" if t.name == "primary"
                   else f"the baseline has no measure '{t.name}'")
            raise PerflabError(f"--fail-if {t.text!r}: {why}; the gate compares medians of: "
                               f"{', '.join(offer)}")


def _machines(store: Any, host_a: int | None, host_b: int | None) -> tuple[str, str, bool | None]:
    """(baseline host, campaign host, same machine?) by the recorded host fingerprints.

    None when a side's machine was not recorded: then nobody can tell.
    """
    def name(h: int | None) -> str:
        if h is None:
            return "an unrecorded machine"
        rec = store.host(h)
        return f"{rec['hostname']} (host {h})"
    same = None if host_a is None or host_b is None else host_a == host_b
    return name(host_a), name(host_b), same


def evaluate(config: GateConfig, store: Any) -> GateResult:
    """Compare config.campaign with the baseline and apply the thresholds."""
    base = store.baseline(config.baseline)
    ca, cb = store.campaign(base.campaign_id), store.campaign(config.campaign)
    check_same_kind(ca, cb, f"baseline '{config.baseline}' (campaign {ca.id})")
    if cb.status == "running":
        raise PerflabError(f"campaign {cb.id} is still running: gate a finished campaign")
    meas_a, meas_b = store.measurements(ca.id), store.measurements(cb.id)
    primary = primary_metric(cb.config)[0] or primary_metric(ca.config)[0]
    samples_a, _ = series(ca.study, meas_a)
    check_measures(config.thresholds, {m for v in samples_a.values() for m in v}, primary)
    samples_b, _ = series(cb.study, meas_b)
    have_b = {m for v in samples_b.values() for m in v}
    for t in config.thresholds:
        if t.measure(primary) not in have_b:
            # A gated measure that vanished is no pass: the workload's output or the run broke.
            raise PerflabError(f"--fail-if {t.text!r}: campaign {cb.id} has no successful run with "
                               f"'{t.name}' although the baseline has; check its failed runs "
                               "('perflab results') or the workload's metric patterns")
    warnings: list[str] = []
    host_a, host_b, same = _machines(store, base.host_id if base.host_id is not None else ca.host_id,
                                     cb.host_id)
    if same is None:
        warnings.append(f"baseline '{config.baseline}' was measured on {host_a}, campaign {cb.id} "
                        f"on {host_b}: cannot check they are the same machine")
    elif not same:
        what = (f"baseline '{config.baseline}' was measured on {host_a}, campaign {cb.id} on {host_b}")
        if not config.cross_machine:
            raise PerflabError(f"{what}: a difference may be the machine's, not the code's; measure "
                               "the baseline on this machine, or pass --cross-machine to gate anyway")
        warnings.append(f"{what}: the gate compares machines as well as code (--cross-machine)")
    measures = ["wall_s"] + ([f"metric:{primary}"] if primary else []) + ["maxrss_kb", "energy_j"]
    measures += [t.measure(primary) for t in config.thresholds if t.measure(primary) not in measures]
    rows, only_a, only_b, notes = compare_measurements(
        ca.study, meas_a, meas_b, alpha=config.alpha, seed=config.seed, config=cb.config,
        measures=measures)
    if not rows:
        raise PerflabError(
            f"campaign {cb.id} shares no measured point with baseline '{config.baseline}' "
            f"(baseline: {', '.join(only_a[:3]) or 'nothing'}; campaign: {', '.join(only_b[:3]) or 'nothing'}): "
            "run the same commands (or name them alike with --command-name)")
    cmp = CompareResult(ca.id, cb.id, ca.study, cb.study, config.alpha, rows, only_a, only_b, notes)
    result = GateResult(config.baseline, cmp, warnings=warnings + notes, hosts=(host_a, host_b))
    for row in rows:
        ts = [t for t in config.thresholds if t.measure(primary) == row.measure]
        line = GateLine(row, ts)
        parts = []
        for t in ts:
            beyond, sig = t.beyond(row), t.significant_side(row)
            if beyond and sig:
                line.failed = True
                parts.append(f"beyond {t.text} and significant: FAILS")
            elif beyond:
                parts.append(f"beyond {t.text} but not significant: passes (noise cannot be ruled out)")
            elif not row.significant:
                parts.append(f"within {t.text}")
            elif (row.ratio > 1) == (t.op == ">"):
                parts.append(f"within {t.text} (significant, but smaller than the threshold)")
            else:
                parts.append(f"within {t.text} (changed significantly the other way)")
        line.verdict = "; ".join(parts) or ("not gated; significant" if row.significant
                                            else "not gated")
        result.lines.append(line)
    for t in config.thresholds:
        if not any(t in ln.thresholds for ln in result.lines):
            result.warnings.append(f"--fail-if {t.text!r}: no comparison of {t.name} (constant "
                                   "or too few runs on a side): nothing to gate")
    if only_a or only_b:
        result.warnings.append(f"unmatched points: {len(only_a)} only in the baseline, "
                               f"{len(only_b)} only in campaign {cb.id}; they are not gated")
    return result
