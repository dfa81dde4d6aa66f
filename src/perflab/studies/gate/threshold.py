"""--fail-if thresholds: 'median>+3%', 'rss>+10MiB', 'events_per_s<-2%' and what they read."""

from __future__ import annotations

import re
from dataclasses import dataclass

from perflab.errors import PerflabError
from perflab.studies.compare.study import CompareRow

DEFAULT_FAIL_IF = "median>+5%"

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
        return self.beyond_medians(row.median_a, row.median_b)

    def beyond_medians(self, a: float, b: float) -> bool:
        """Whether a change of the median from a to b passes the limit in its direction."""
        change = b / a - 1.0 if self.relative else b - a
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
