"""Every plot agrees with its table: the same rows, numbers, units, interval levels and findings.

Sections are rendered from simulated stored campaigns (the summaries the studies store, with
random effects, intervals and significance, several seeds per study), and each plot's marks
are held against the table row they claim to draw, and against the SVG that draws them.
"""

from __future__ import annotations

import random
import re
from types import SimpleNamespace

import pytest

from perflab.report import plots
from perflab.report.answers import answers
from perflab.report.build import build_section  # registers every study's builder
from perflab.report.model import Report
from perflab.report.numbers import plural
from perflab.report.render import to_markdown
from perflab.studies.instances.result import InstancesResult

FINDINGS = {plots.BETTER, plots.WORSE, plots.NOT_SIGNIFICANT}


def _ci(rng: random.Random, centre: float, level: float, significant: bool | None = None) -> dict:
    """An interval around `centre` that excludes 1 exactly when `significant` (ratios)."""
    width = rng.uniform(0.01, 0.3) * centre
    low, high = centre - width * rng.uniform(0.2, 1), centre + width * rng.uniform(0.2, 1)
    if significant is not None:
        if significant and low <= 1 <= high:
            low, high = (1.001, max(high, 1.01)) if centre > 1 else (min(low, 0.99), 0.999)
        if not significant:
            low, high = min(low, 0.995), max(high, 1.005)
    return {"low": low, "high": high, "level": level}


def _ratio(rng: random.Random, significant: bool) -> float:
    return rng.choice([rng.uniform(0.5, 0.97), rng.uniform(1.03, 2.5)]) if significant else rng.uniform(0.985, 1.015)


def variants_summary(rng: random.Random) -> dict:
    out = []
    for k in range(rng.randint(2, 5)):
        comps = {}
        for q, hib in (("events_per_s", True), ("wall_s", False), ("maxrss_kb", False)):
            sig = rng.random() < 0.5
            r = _ratio(rng, sig)
            comps[q] = {"quantity": q, "ratio": r, "ci": _ci(rng, r, 0.9609375, sig), "p": rng.uniform(0.001, 0.04)
                        if sig else rng.uniform(0.06, 1), "p_raw": 0.01, "effect": 0.5, "significant": sig,
                        "higher_is_better": hib, "pairs": 8}
        out.append({"name": f"v{k}", "flags": "-O2", "status": "measured", "n_ok": 8, "build": {}, "comparisons": comps,
                    "estimates": {"wall_s": {"median": rng.uniform(0.2, 2), "ci": _ci(rng, 1.0, 0.99)},
                                  "maxrss_kb": {"median": 40000.0, "ci": _ci(rng, 40000.0, 0.99)},
                                  "events_per_s": {"median": rng.uniform(50, 200), "ci": _ci(rng, 100.0, 0.99)}}})
    base = {"name": "base", "flags": "-O2", "status": "baseline", "n_ok": 8, "build": {}, "comparisons": {},
            "estimates": {"wall_s": {"median": 1.0, "ci": _ci(rng, 1.0, 0.99)}}}
    # every field a stored VariantsResult has: the section reads it typed (VariantsResult.from_dict)
    return {"baseline": "base", "primary": "events_per_s", "higher_is_better": True, "rounds": 8,
            "level": 0.95, "alpha": 0.05, "checksum_metric": None, "order": [],
            "variants": [base] + out, "verdict": "simulated"}


def cores_summary(rng: random.Random) -> dict:
    cpus = []
    for c in range(rng.randint(2, 8)):
        slow = rng.random() < 0.3
        r = rng.uniform(1.05, 1.4) if slow else rng.uniform(0.97, 1.03)
        cpus.append({"cpu": c, "socket": 0, "core": c, "node": 0, "siblings": [c], "runs": 6, "failed": 0,
                     "median": rng.uniform(10, 20), "ci": _ci(rng, 15.0, 0.96875), "ratio": r,
                     "ratio_ci": _ci(rng, r, 0.96875, slow), "rounds": 6, "slower_rounds": 6 if slow else 3,
                     "p_adjusted": 0.01 if slow else 1.0, "verdict": "slow" if slow else "not significant"})
    return {"cpus": cpus, "unit": "ms", "rounds": 6, "runs": 6 * len(cpus), "mde": 0.05, "mde_why": "",
            "stopped": "rounds", "verdict": "simulated"}


def micro_summary(rng: random.Random) -> dict:
    cells, diffs = [], []
    for b in ("getpid", "sin", "call", "strcpy")[: rng.randint(2, 4)]:
        for abi in ("m64", "m32"):
            cells.append({"bench": b, "abi": abi, "median_ns": rng.uniform(1, 100), "n": 10, "ci": None,
                          "ops_per_s": None})
        sig = rng.random() < 0.5
        r = _ratio(rng, sig)
        ci = _ci(rng, r, 0.978515625, sig)
        diffs.append({"bench": b, "abi": "m32", "base": "m64", "pct": 100 * (r - 1), "significant": sig,
                      "p_value": 0.01 if sig else 0.5, "p_adjusted": 0.01 if sig else 0.5,
                      "ci_pct": {"low": 100 * (ci["low"] - 1), "high": 100 * (ci["high"] - 1), "level": ci["level"]}})
    return {"abis": ["m64", "m32"], "cells": cells, "diffs": diffs, "runs": 10 * len(cells)}


def frontend_summary(rng: random.Random) -> dict:
    points, ratios = [], []
    for b in (16384, 65536, 262144, 1048576):
        for mode in ("4k", "2m"):
            m = rng.uniform(20, 100)
            points.append({"bytes": b, "cpu": None, "mode": mode, "n": b // 16, "median_ns": m,
                           "ci": _ci(rng, m, 0.978515625), "reps": 10})
        helps = rng.random() < 0.4
        r = rng.uniform(1.05, 1.3) if helps else rng.uniform(0.97, 1.03)
        ratios.append({"bytes": b, "cpu": None, "pairs": 10, "ratio": r, "ci": _ci(rng, r, 0.978515625, helps),
                       "helps": helps, "p_value": 0.001 if helps else 0.5, "p_adjusted": 0.01 if helps else 1.0})
    return {"kind": "switch", "points": points, "ratios": ratios, "runs": 80,
            "knees": [{"cpu": None, "mode": "4k", "knee_bytes": 65536}, {"cpu": None, "mode": "2m", "knee_bytes": 65536}],
            "references": {"L1i cache": 32768, "L2 cache": 1048576, "L1 iTLB reach 4K (64 x 4K)": 262144},
            "verdict": "simulated"}


def run_summary(rng: random.Random) -> dict:
    benches = []
    # energy adds four columns after the finding: a plot must still take each row's finding
    energy = {"source": "rapl", "joules_per_run": 2.0, "joules_per_run_ci": _ci(rng, 2.0, 0.978515625)} \
        if rng.random() < 0.5 else None
    for k in range(rng.randint(2, 4)):
        med = rng.uniform(0.1, 2)
        rel = None if k == 0 else {"ratio": (r := _ratio(rng, sig := rng.random() < 0.5)),
                                   **_ci(rng, r, 0.975, sig), "target": 0.975, "significant": sig,
                                   "verdict": ("slower" if r > 1 else "faster") if sig else None}
        benches.append({"command": f"cmd {k}", "params": {}, "summary": {"n": 10, "median": med, "mean": med, "stddev": 0.01},
                        "median_ci": _ci(rng, med, 0.978515625), "user": [0.1], "system": [0.0],
                        "maxrss_kb": [1000], "metrics": {"fps": [rng.uniform(10, 60)]}, "relative": rel,
                        "energy": energy})
    # every field a stored Benchmark must have: the section reads it typed (RunStudyResult.from_dict)
    return {"benchmarks": benches, "ranking": {"measure": "wall time", "reference": "cmd 0"}, "verdict": "simulated"}


def instances_summary(rng: random.Random) -> dict:
    pts = [{"n": n, "throughput": (t := rng.uniform(50, 200)), "ci": _ci(rng, t, 0.96), "reps": 5,
            "per_copy": t / n, "gain_per_copy": None if n == 1 else 3.0} for n in (1, 2, 4)]
    best = max(pts, key=lambda p: p["throughput"])
    # every field a stored InstancesResult has: the section reads it typed (InstancesResult.from_dict)
    return {"unit": "events/s", "ns": [1, 2, 4], "optimum_n": best["n"], "optimum_throughput": best["throughput"],
            "optimum_policy": "compact", "verdict": "simulated",
            "scans": [{"policy": "compact", "points": pts, "optimum_n": best["n"],
                       "optimum_throughput": best["throughput"], "within_1pct_n": best["n"]}]}


SIMULATED = {"variants": variants_summary, "cores": cores_summary, "micro": micro_summary,
             "frontend": frontend_summary, "run": run_summary, "instances": instances_summary}


def campaign(study: str, summary: dict, cid: int = 1, config: dict | None = None) -> SimpleNamespace:
    return SimpleNamespace(id=cid, study=study, status="done", summary=summary, labels={}, host_id=None,
                           config=config or {})


def _number(cell: object) -> float:
    return float(str(cell).replace(",", "").lstrip("×")) if isinstance(cell, str) else float(cell)


def check_plot_against_table(sec, plot) -> None:
    """The plot's marks are the table's rows: value, finding, unit, level; and the SVG draws them."""
    (table,) = [t for t in sec.tables if t.title == plot.source]
    col = table.columns.index(plot.column)
    found = [i for i, c in enumerate(table.columns) if c.startswith("finding")]
    for m in plot.marks:
        row = table.rows[m.row]
        assert _number(row[col]) == pytest.approx(m.value, rel=5e-3), (plot.title, row)
        if m.status != plots.ESTIMATE:
            assert found and row[found[0]] == m.status, (plot.title, row, m.status)
            assert m.status in FINDINGS
    for status in {m.status for m in plot.marks}:
        n = sum(1 for m in plot.marks if m.status == status)
        assert len(re.findall(rf'id="mark-{status.replace(" ", "-")}-\d+"', plot.svg)) == n, (plot.title, status)
        assert plots.LEGEND[status] in plot.svg, (plot.title, status)  # the legend names every finding drawn
    for status in FINDINGS - {m.status for m in plot.marks}:
        assert f'id="mark-{status.replace(" ", "-")}-' not in plot.svg
    if plot.unit:  # the same unit in the table's column, the plot's axis label and title
        assert f"[{plot.unit}]" in plot.column and f"[{plot.unit}]" in plot.svg
    if plot.level:  # the level drawn is the level the table's intervals have
        assert plot.level in plot.svg and plot.level in plot.title
        pcts = [int(x) for x in re.findall(r"(\d+)%", plot.level)]
        shown = {int(x) for r in (table.rows[m.row] for m in plot.marks) for c in r
                 for x in re.findall(r"\((\d+)% CI\)", str(c))}
        assert shown and min(pcts) <= min(shown) and max(shown) <= max(pcts), (plot.title, shown)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("study", sorted(SIMULATED))
def test_every_plot_shows_what_its_table_says(study, seed):
    rng = random.Random(f"{study}-{seed}")
    sec = build_section(campaign(study, SIMULATED[study](rng)), [])
    assert not [n for n in sec.notes if "not drawn" in n], sec.notes
    marked = [p for p in sec.plots if p.marks]
    assert marked, f"{study}: no plot says what it draws"
    for plot in marked:
        check_plot_against_table(sec, plot)
    for plot in sec.plots:  # no axis or label in raw field names
        assert not re.search(r">[^<]*\b(maxrss_kb|wall_s|ratio 1 \[1, 1\])", plot.svg), plot.title


def test_ratio_axes_are_logarithmic_and_centred_on_1():
    svg = plots.ratio_axis(["a", "b"], [1.5, 0.9], [1.2, 0.8], [2.0, 1.0], [plots.WORSE, plots.NOT_SIGNIFICANT],
                           "x (log scale)", "95% CI")
    ticks = [float(t) for t in re.findall(r"<text[^>]*>([\d.]+)</text>", svg)]
    assert 1.0 in ticks and 0.5 in ticks and 2.0 in ticks  # as far below 1 as above it


def test_throughput_starts_at_zero_and_copies_are_whole(tmp_path):
    sec = build_section(campaign("instances", instances_summary(random.Random(3))), [])
    svg = sec.plots[0].svg
    labels = re.findall(r"<text[^>]*>([^<]+)</text>", svg)
    assert "0" in labels  # the throughput axis starts at zero
    assert not any(re.fullmatch(r"\d+\.5", t) for t in labels)  # no 1.5 copies


def test_frontend_draws_the_cache_sizes_and_one_line_for_equal_knees():
    sec = build_section(campaign("frontend", frontend_summary(random.Random(1))), [])
    svg = sec.plots[0].svg
    for name in ("L1i cache", "L2 cache", "knee (4K, 2M pages)"):
        assert name in svg, name
    assert "knee (4K pages)" not in svg


def _answer(study: str, summary: dict, config: dict | None = None):
    camp = campaign(study, summary, config=config)
    (a,) = answers([camp], [build_section(camp, [])], {})
    return a


def test_answers_say_what_they_rest_on_and_when_it_is_not_enough():
    inst = instances_summary(random.Random(2))
    for p in inst["scans"][0]["points"]:
        p.update(reps=1, ci=None)
    # as the study stores a scan of one round: no optimum, the scan's reason says why
    reason = "not enough evidence: 1 round per point; a test needs at least 4 (use --reps 5)"
    top = inst["optimum_n"]
    inst.update(optimum_n=None, optimum_throughput=None, optimum_policy=None)
    inst["scans"][0].update(optimum_n=None, optimum_throughput=None, top_n=top, reason=reason)
    inst["verdict"] = InstancesResult.from_dict(inst).verdict()
    a = _answer("instances", inst)
    assert a.answer.startswith("not enough evidence") and a.basis.startswith("1 round per point")
    assert "1 rounds" not in a.basis and "no CI" in a.basis

    # a scan that failed before any point (a study of the lab that broke) keeps no result: the
    # report says so instead of failing the lab with a traceback
    gone = _answer("instances", {"scans": [], "verdict": ""})
    assert gone.basis == "no result stored" and gone.answer.startswith("Not enough evidence: ")

    cores = cores_summary(random.Random(2))
    for c in cores["cpus"]:
        c["verdict"] = "not significant"
    cores.update(mde=None, mde_why="too few rounds (3) for a sign test to reach alpha", rounds=3)
    a = _answer("cores", cores)
    assert a.answer.startswith("Not enough evidence: ") and a.basis.startswith("3 rounds x ")
    assert "97% CI" in a.basis

    run = run_summary(random.Random(5))
    run["benchmarks"][1]["relative"].update(level=0.5, target=0.975, significant=False, verdict=None)
    a = _answer("run", run)
    assert a.answer.startswith("Not enough evidence: ") and "10 runs per command, 98% CI" == a.basis

    enough = _answer("variants", variants_summary(random.Random(1)))
    assert not enough.answer.startswith("Not enough") and enough.basis.startswith("8 rounds paired")


def test_answers_name_the_program_and_mark_built_in_ones():
    a = _answer("micro", micro_summary(random.Random(1)), {"benches": ["sin"]})
    assert a.program.endswith("(built-in)") and "not on the workload" in a.caveats[0]
    a = _answer("cores", cores_summary(random.Random(1)), {"workload": {"name": "gnugo", "source": "perflab.toml"}})
    assert a.program == "gnugo" and not any("built-in" in c for c in a.caveats)
    a = _answer("cores", cores_summary(random.Random(1)), {"workload": {"name": "minihlt", "source": "builtin"}})
    assert a.program == "minihlt (built-in)"


def test_plural_and_user_metrics_columns():
    assert [plural(1, "round"), plural(2, "round"), plural(1, "copy"), plural(3, "copy")] == [
        "1 round", "2 rounds", "1 copy", "3 copies"]
    sec = build_section(campaign("run", run_summary(random.Random(1))), [])
    assert "fps" in sec.tables[0].columns  # the workload's own metric next to time and memory


def test_markdown_report_passes_the_linter():
    """A report of every study, linted with pymarkdown. Configured: GFM tables on, and MD013 (line
    length) not applied to table rows: a row of data is one line however wide (prose is wrapped)."""
    api = pytest.importorskip("pymarkdown.api")
    rng = random.Random(7)
    camps = [campaign(s, f(rng), cid=i + 1) for i, (s, f) in enumerate(SIMULATED.items())]
    camps.append(campaign("profile", {"samples": 1, "event": "cpu-clock", "opened": True,
                                      "recordings": [{"opened": True, "start_line": "start #7",
                                                      "stop_line": "done #7"}],
                                      "top": [{"share": 1.0, "samples": 1, "symbol": "f<int>*", "dso": "a"}]},
                          cid=9))
    secs = [build_section(c, []) for c in camps]
    md = to_markdown(Report("perflab lab: gnugo, fps-encoder on host", "now", "0", None, secs,
                            answers(camps, secs, {})))
    lint = (api.PyMarkdownApi().enable_extension_by_identifier("markdown-tables")
            .set_boolean_property("plugins.md013.tables", False))
    failures = lint.scan_string(md).scan_failures
    assert failures == [], "\n".join(f"{f.line_number}: {f.rule_id} {f.rule_description}" for f in failures[:10])
    assert "1 samples" not in md and "window(s)" not in md and "((" not in md and "))" not in md
    assert "1 window from the line 'start #7' to 'done #7'" in md
    for s in secs:  # every answer links to its section's heading
        assert f"(#{s.title.lower().replace(' (campaign ', '-campaign-').rstrip(')').replace(' ', '-')})" in md


@pytest.mark.parametrize("study", ["run", "cores", "profile", "score"])
def test_a_campaign_without_its_result_is_shown_generically(study):
    """Still running (no summary) or failed before its analysis (the error alone): no empty table
    of the study's, the error shown as it is."""
    running = SimpleNamespace(id=2, study=study, status="interrupted", summary=None, labels={}, host_id=None, config={})
    sec = build_section(running, [])
    assert sec.tables == [] and sec.verdict == f"{study}: interrupted; partial results."
    failed = campaign(study, {"error": "perf record wrote no perf.data: fix the event"})
    failed.status = "failed"
    sec = build_section(failed, [])
    (facts,) = sec.tables
    assert facts.rows == [["error", "perf record wrote no perf.data: fix the event"]]
