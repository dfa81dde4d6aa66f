"""`perflab variants`' section: each build's medians, and each variant against the baseline with
its interval and finding, from the VariantsResult."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from perflab.report import plots
from perflab.report.generic import _plot, add_energy, builder, finding, generic, levels, ratio_cell
from perflab.report.model import Mark, Section, Table
from perflab.report.numbers import ci_of
from perflab.studies.compare.keys import measure_title
from perflab.studies.variants.result import VariantOutcome, VariantsResult

if TYPE_CHECKING:
    from perflab.store import Campaign, Measurement


def name_of(measure: str) -> str:
    """A measure's name without its unit: 'wall time' from 'wall time [s]'."""
    return measure_title(measure).split(" [")[0]


@builder("variants", VariantsResult.from_dict)
def variants_section(campaign: Campaign, result: VariantsResult, measurements: list[Measurement]) -> Section:
    sec = generic(campaign, {"notes": []})  # a variants result keeps its notes per variant
    rows = result.variants
    base, primary = result.baseline, result.primary
    sec.verdict = result.verdict or f"baseline {base} only."
    if result.caveat:
        sec.notes.append(result.caveat)
    metrics = sorted({k for v in rows for k in v.estimates} - {"wall_s", "maxrss_kb", "energy_j"})

    def est(v: VariantOutcome, q: str) -> Any:
        e = v.estimates.get(q)
        return None if e is None else e.median

    def est_ci(v: VariantOutcome, q: str) -> dict | None:
        e = v.estimates.get(q)
        return None if e is None or e.ci is None else e.ci.as_dict()

    cols = ["variant", "flags", "status", "runs", "median wall [s]", "CI", measure_title("maxrss_kb"),
            "text [B]"] + [f"median {m}" for m in metrics]
    cells = [[v.name, v.flags, v.status, v.n_ok, est(v, "wall_s"), ci_of(est_ci(v, "wall_s"), estimate=est(v, "wall_s")),
              est(v, "maxrss_kb"), (v.build.sizes or {}).get("text")]
             + [est(v, m) for m in metrics] for v in rows]
    note = add_energy(cols, cells, [v.energy for v in rows])
    sec.tables = [Table("Variants", cols, cells, note=note)]
    order = [primary] + [q for q in ("wall_s", "maxrss_kb", "energy_j") if q != primary]
    comps = [(v, c) for v in rows for q in order if (c := v.comparisons.get(q)) and v.status != "baseline"]
    if not comps:
        return sec
    seq = result.sequential is not None  # --until-decided: repeated CIs decide, p is raw
    title = (f"Each variant against the baseline {base} (paired by round; --until-decided: repeated CIs at the "
             "last look's level, Bonferroni across variants, alpha spent over the looks)" if seq else
             f"Each variant against the baseline {base} (paired by round, Holm across variants)")
    crow, marks = [], []
    for i, (v, c) in enumerate(comps):
        f = finding(c.significant, c.ratio, c.higher_is_better)
        marks.append(Mark(i, c.ratio, f))
        ci = c.ci.as_dict() if c.ci is not None else None
        crow.append([v.name, name_of(c.quantity), "higher" if c.higher_is_better else "lower",
                     ratio_cell(c.ratio, ci), ci_of(ci, estimate=c.ratio), c.p, c.pairs, f])
    sec.tables.append(Table(title, ["variant", "measure", "better is", "ratio to baseline", "CI",
                                    "p (raw, not the test)" if seq else "p (Holm)", "rounds", "finding"], crow))
    cis = [c.ci.as_dict() if c.ci is not None else None for _, c in comps]
    lv = levels(cis)
    _plot(sec, f"Variants against {base}: ratios with their {lv} (log axis centred on 1)", lambda: plots.ratio_axis(
        [f"{v.name}: {name_of(c.quantity)}" for v, c in comps], [c.ratio for _, c in comps],
        [(ci or {}).get("low") for ci in cis], [(ci or {}).get("high") for ci in cis],
        [m.status for m in marks], xlabel=f"variant / {base} (log scale)", level=lv),
        source=title, column="ratio to baseline", level=lv, marks=marks)
    return sec
