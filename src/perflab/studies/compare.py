"""Compare two campaigns (two machines, dates or builds) measure by measure.

Measurements are matched by label and parameters; for each match and each measure (wall time,
every metric, max RSS) the ratio of medians B/A comes with a bootstrap CI and a Mann-Whitney
p-value, Holm-corrected over all the comparisons made.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


_MEASURES_RESULT = (("wall_s", "wall time [s]", False), ("maxrss_kb", "max RSS [KiB]", False),
                    ("user_s", "user time [s]", False))


@dataclass(frozen=True)
class CompareConfig:
    a: int
    b: int
    alpha: float = 0.05
    seed: int = 0


@dataclass
class CompareRow:
    key: str
    measure: str
    n_a: int
    n_b: int
    median_a: float
    median_b: float
    ratio: float
    lo: float
    hi: float
    p_value: float
    p_adjusted: float = 1.0
    significant: bool = False
    better: str = ""  # "A", "B" or "" (not significant / direction unknown)


@dataclass
class CompareResult:
    a: int
    b: int
    study_a: str
    study_b: str
    rows: list[CompareRow] = field(default_factory=list)
    unmatched_a: list[str] = field(default_factory=list)
    unmatched_b: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        sig = [r for r in self.rows if r.significant]
        if not self.rows:
            return f"campaigns {self.a} and {self.b} share no measurement to compare."
        if not sig:
            return (f"no significant difference between campaign {self.a} and {self.b} "
                    f"in {len(self.rows)} comparisons.")
        top = max(sig, key=lambda r: abs(r.ratio - 1))
        return (f"{len(sig)} of {len(self.rows)} comparisons differ significantly; largest: "
                f"{top.measure} of {top.key} is {100 * (top.ratio - 1):+.1f} % in B (campaign {self.b}).")

    def as_dict(self) -> dict[str, Any]:
        from dataclasses import asdict

        return {"a": self.a, "b": self.b, "study_a": self.study_a, "study_b": self.study_b,
                "verdict": self.verdict, "rows": [asdict(r) for r in self.rows],
                "unmatched_a": self.unmatched_a, "unmatched_b": self.unmatched_b}


def _group_key(m: Any) -> str:
    params = {k: v for k, v in (m.params or {}).items() if k not in ("rep", "round", "order")}
    p = json.dumps(params, sort_keys=True, default=str)
    return m.label + ("" if p == "{}" else " " + p)


def _series(measurements: list) -> dict[str, dict[str, list[float]]]:
    out: dict[str, dict[str, list[float]]] = {}
    for m in measurements:
        r = m.result
        if not r.ok:
            continue
        g = out.setdefault(_group_key(m), {})
        g.setdefault("wall_s", []).append(r.wall_ns / 1e9)
        g.setdefault("maxrss_kb", []).append(float(r.maxrss_kb))
        g.setdefault("user_s", []).append(r.user_s)
        for k, v in (r.metrics or {}).items():
            if isinstance(v, (int, float)) and "checksum" not in k:
                g.setdefault(f"metric:{k}", []).append(float(v))
    return out


def run_compare(config: CompareConfig, store: Any) -> CompareResult:
    from perflab import stats

    # store.campaign raises a one-line PerflabError for an unknown id.
    ca, cb = store.campaign(config.a), store.campaign(config.b)
    sa, sb = _series(store.measurements(config.a)), _series(store.measurements(config.b))
    res = CompareResult(config.a, config.b, ca.study, cb.study)
    res.unmatched_a = sorted(set(sa) - set(sb))
    res.unmatched_b = sorted(set(sb) - set(sa))
    for key in sorted(set(sa) & set(sb)):
        for measure in sorted(set(sa[key]) & set(sb[key])):
            a, b = sa[key][measure], sb[key][measure]
            if len(a) < 2 or len(b) < 2:
                continue
            if len(set(a) | set(b)) == 1:
                continue  # the same constant on both sides (event counts): nothing to test
            c = stats.compare(b, a, alpha=config.alpha)
            res.rows.append(CompareRow(key, measure, len(a), len(b), stats.summary(a).median,
                                       stats.summary(b).median, c.ratio, c.lo, c.hi, c.p_value))
    if res.rows:
        adj = stats.holm([r.p_value for r in res.rows])
        for r, p in zip(res.rows, adj):
            r.p_adjusted = p
            # Significant only when the test rejects AND the ratio's CI excludes 1.
            r.significant = p < config.alpha and not (r.lo <= 1.0 <= r.hi)
            if r.significant:
                higher_better = r.measure.startswith("metric:") and "per_s" in r.measure
                b_larger = r.ratio > 1
                r.better = "B" if (b_larger == higher_better) else "A"
    return res
