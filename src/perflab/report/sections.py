"""The study builders: each study's tables, verdict and the plots the seeds drew (see generic.py)."""

from __future__ import annotations

from typing import Any

from perflab.report.generic import _cell, _ci_text, _pct, _plot, builder, generic
from perflab.report.model import Section, Table
from perflab.report import plots


@builder("run")
def run_section(campaign: Any, summary: dict, measurements: list) -> Section:
    benches = [b for b in summary.get("benchmarks") or [] if b.get("summary")]
    if not benches:
        return generic(campaign, summary)
    sec = generic(campaign, {"notes": summary.get("warnings", [])})
    rows = []
    for b in benches:
        s, ci, rel = b["summary"], b.get("median_ci") or {}, b.get("relative")
        m = _run_medians(b.get("metrics") or {})
        rows.append([b.get("command"), s.get("n"), s.get("median"), _ci_text(ci.get("low"), ci.get("high")),
                     f"{ci.get('level', 0):.0%}", s.get("mean"), s.get("stddev"),
                     _mean(b.get("user")), _mean(b.get("system")), max(b.get("maxrss_kb") or [0]),
                     m.get("events_per_s"),
                     "1.00 (reference)" if not rel or rel.get("reference", rel.get("ratio") == 1.0)
                     else f"{rel['ratio']:.3f} {_ci_text(rel['low'], rel['high'], '{:.3f}')}"])
    cols = ["command", "runs", "median", "CI", "CI level", "mean", "stddev", "user", "sys", "max RSS [KiB]",
            "events/s", "relative"]
    note = _add_energy(cols, rows, [b.get("energy") for b in benches])
    sec.tables = [Table("Wall time per command [s]", cols, rows, note=note)]
    sec.verdict = summary.get("verdict") or sec.verdict
    _plot(sec, "Median wall time with its CI (points: medians; bars: CIs)", lambda: plots.bars_with_ci(
        [str(b.get("command"))[:30] for b in benches], [b["summary"]["median"] for b in benches],
        [(b.get("median_ci") or {}).get("low") for b in benches],
        [(b.get("median_ci") or {}).get("high") for b in benches], ylabel="wall time [s]"))
    slower = [b for b in benches if b.get("relative") and b["relative"].get("ratio") != 1.0]
    if slower:
        _plot(sec, "Relative to the reference (Moses' CI, Bonferroni; log axis)", lambda: plots.ratios_log(
            [str(b.get("command"))[:30] for b in slower], [b["relative"]["ratio"] for b in slower],
            [b["relative"]["low"] for b in slower], [b["relative"]["high"] for b in slower],
            [b["relative"]["low"] > 1.0 for b in slower], xlabel="median / the reference's median (log scale)"))
    return sec


ENERGY_COLUMNS = ["J/run", "J/run CI", "J/event", "J/event CI"]


def _add_energy(cols: list, rows: list[list], energies: list[dict | None]) -> str:
    """Joules per run and per event with their CIs as four more columns, where any row was
    measured; the note names the source (nothing is added where no energy was measured)."""
    if not any(energies):
        return ""
    cols.extend(ENERGY_COLUMNS)
    for row, e in zip(rows, energies):
        e = e or {}
        row.extend([e.get("joules_per_run"), _level_ci(e.get("joules_per_run_ci")),
                    e.get("joules_per_event"), _level_ci(e.get("joules_per_event_ci"))])
    sources = sorted({e["source"] for e in energies if e and e.get("source")})
    return f"energy: {'; '.join(sources)}; medians with order-statistic CIs at the level shown"


def _level_ci(ci: dict | None) -> str:
    if not ci:
        return "—"
    return _ci_text(ci.get("low"), ci.get("high")) + f" {ci.get('level', 0):.0%}"


def _mean(xs: Any) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _run_medians(metrics: dict) -> dict:
    import statistics

    return {k: statistics.median([x for x in v if x is not None]) for k, v in metrics.items()
            if any(x is not None for x in v)}


@builder("cores")
def cores_section(campaign: Any, summary: dict, measurements: list) -> Section:
    sec = generic(campaign, {"notes": summary.get("notes", [])})
    cpus = summary.get("cpus") or []
    unit = summary.get("unit", "")
    sec.verdict = summary.get("verdict") or ""
    for x in summary.get("disturbances") or []:
        rounds = ", ".join(map(str, x.get("rounds") or []))
        sec.verdict += (f"; CPU {x.get('cpu')} {'was slower only in' if x.get('intermittent') else 'was disturbed in'} "
                        f"rounds {rounds} ({_pct(x.get('ratio'))})")

    def ci(c: dict | None, fmt: str = "{:.4g}") -> str:
        return _ci_text((c or {}).get("low"), (c or {}).get("high"), fmt) + (
            f" {c['level']:.0%}" if c and c.get("level") is not None else "")

    sec.tables = [Table(f"Per CPU ({unit}); ratio = cost / median of the other CPUs in the same round",
                        ["CPU", "socket", "core", "node", "siblings", "runs", "failed", "median", "CI", "ratio",
                         "ratio CI", "slower in", "p (Holm)", "verdict"],
                        [[c.get("cpu"), c.get("socket"), c.get("core"), c.get("node"), _cell(c.get("siblings")),
                          c.get("runs"), c.get("failed"), c.get("median"), ci(c.get("ci")), _pct(c.get("ratio")),
                          ci(c.get("ratio_ci"), "{:.3f}"), f"{c.get('slower_rounds')}/{c.get('rounds')}",
                          c.get("p_adjusted"), c.get("verdict") or ""] for c in cpus],
                        note=f"{summary.get('rounds', '?')} rounds ({summary.get('mode', 'sequential')}), stopped "
                             f"by {summary.get('stopped', '?')}; smallest detectable slowdown "
                             f"{_pct(1 + summary['mde']) if summary.get('mde') is not None else '—'}.")]
    ran = [c for c in cpus if c.get("median") is not None]  # a CPU whose runs all failed has no bar
    if ran:
        _plot(sec, f"Per-CPU median {unit} with its CI (slow CPUs: orange squares)", lambda: plots.bars_with_ci(
            [str(c["cpu"]) for c in ran], [c["median"] for c in ran],
            [(c.get("ci") or {}).get("low") for c in ran], [(c.get("ci") or {}).get("high") for c in ran],
            ylabel=f"median [{unit}]", highlight=[c.get("verdict") == "slow" for c in ran]))
    return sec


@builder("instances")
def instances_section(campaign: Any, summary: dict, measurements: list) -> Section:
    sec = generic(campaign, {"notes": summary.get("notes", [])})
    unit = summary.get("unit", "throughput")
    scans = summary.get("scans") or []
    if scans:
        sec.verdict = instances_verdict(summary)
    rows = []
    for s in scans:
        for p in s.get("points") or []:
            ci = p.get("ci") or {}
            rows.append([s.get("policy"), p.get("n"), p.get("throughput"),
                         _ci_text(ci.get("low"), ci.get("high")) + (f" {ci['level']:.0%}" if ci else ""),
                         p.get("per_copy"), p.get("gain_per_copy"), p.get("start_spread_us")]
                        + ([p.get("watts"), p.get("joules_per_unit")] if summary.get("energy_source") else []))
    work = unit.split("/")[0]
    work = "copy" if work == "copies" else work.removesuffix("s") or "unit"
    energy = ["watts", f"J per {work}"] if summary.get("energy_source") else []
    sec.tables = [Table(f"Throughput against copies ({unit})",
                        ["policy", "copies", "throughput", "CI", "per copy", "gain per added copy",
                         "start spread [us]", *energy], rows,
                        note=f"energy: {summary['energy_source']}; fewest joules per unit of work at "
                             f"N = {summary.get('energy_optimum_n')}" if energy else "")]
    fork = summary.get("fork") or []
    if fork:
        sec.tables.append(Table("Forked master without and with NUMA placement (seed 004's table)",
                                ["workers", f"no NUMA ({unit})", f"NUMA ({unit})", "NUMA gain"],
                                [[f.get("n"), f.get("no_numa"), f.get("numa"), f.get("gain")] for f in fork]))
        if summary.get("fork_verdict"):
            sec.verdict = ((sec.verdict or "") + " Fork master: " + summary["fork_verdict"]["text"]).strip()
    if scans:
        _plot(sec, "Machine throughput against number of copies", lambda: plots.lines(
            {s["policy"]: ([p["n"] for p in s["points"]], [p["throughput"] for p in s["points"]]) for s in scans},
            "copies", unit))
        _plot(sec, "Gain in throughput per added copy", lambda: plots.lines(
            {s["policy"]: ([p["n"] for p in s["points"] if p.get("gain_per_copy") is not None],
                           [p["gain_per_copy"] for p in s["points"] if p.get("gain_per_copy") is not None])
             for s in scans}, "copies", f"{unit} per added copy"))
    return sec


@builder("variants")
def variants_section(campaign: Any, summary: dict, measurements: list) -> Section:
    sec = generic(campaign, {"notes": summary.get("notes", [])})
    rows = summary.get("variants") or []
    measured = [v for v in rows if (v.get("estimates") or {}).get("wall_s")]
    base, primary = summary.get("baseline"), summary.get("primary")
    sec.verdict = summary.get("verdict") or f"baseline {base} only."
    if summary.get("caveat"):
        sec.notes.append(summary["caveat"])

    def wall(v: dict) -> dict:
        return v["estimates"]["wall_s"]

    cols = ["variant", "flags", "status", "median wall [s]", "CI", "max RSS [KiB]", "text [B]",
            f"{primary} vs base", "verdict"]
    cells = [[v.get("name"), v.get("flags"), v.get("status"), wall(v)["median"] if v in measured else None,
              _level_ci(wall(v)["ci"]) if v in measured else None,
              (v["estimates"].get("maxrss_kb") or {}).get("median"),
              ((v.get("build") or {}).get("sizes") or {}).get("text"),
              (v.get("comparisons") or {}).get(primary, {}).get("ratio"), v.get("verdict")] for v in rows]
    note = _add_energy(cols, cells, [v.get("energy") for v in rows])
    sec.tables = [Table("Variants", cols, cells, note=note)]
    if measured:
        _plot(sec, "Wall time per variant (median with its CI; significant: orange squares)", lambda: plots.bars_with_ci(
            [v["name"] for v in measured], [wall(v)["median"] for v in measured],
            [wall(v)["ci"]["low"] for v in measured], [wall(v)["ci"]["high"] for v in measured],
            ylabel="wall time [s]", highlight=[v.get("status") == "different result" or bool(
                (v.get("comparisons") or {}).get("wall_s", {}).get("significant")) for v in measured]))
        _plot(sec, "Max RSS per variant (median)", lambda: plots.bars_with_ci(
            [v["name"] for v in measured],
            [((v["estimates"].get("maxrss_kb") or {}).get("median") or 0) / 1024 for v in measured],
            ylabel="max RSS [MiB]", highlight=[bool((v.get("comparisons") or {}).get("maxrss_kb", {}).get(
                "significant")) for v in measured], zero=True))
    return sec


@builder("profile")
def profile_section(campaign: Any, summary: dict, measurements: list) -> Section:
    sec = generic(campaign, {k: v for k, v in summary.items() if k in ("verdict", "notes")})
    top = summary.get("top") or []
    sec.tables = [Table(f"Top functions ({summary.get('event', '?')})", ["share", "samples", "symbol", "shared object"],
                        [[f"{100 * (t.get('share') or 0):.2f} %", t.get("samples"), t.get("symbol"), t.get("dso")]
                         for t in top])]
    lat = summary.get("enable_latency_us") or []
    if lat:
        sec.notes.append(f"marker-to-enabled latency: {', '.join(f'{x:.0f} us' for x in lat[:6])}")
    if summary.get("event_reason"):
        sec.notes.append(str(summary["event_reason"]))
    for a in summary.get("annotations") or []:
        hint = " — front-end hint: samples pile on the first instructions" if a.get("front_end_hint") else ""
        sec.notes.append(f"{a.get('symbol')}: {100 * (a.get('head_share') or 0):.0f} % of its samples on its "
                         f"{a.get('head', 'first instructions')}{hint}")
    if summary.get("window_opened") is False:
        sec.verdict = summary.get("verdict") or "the window never opened"
    return sec


@builder("profile-diff")
def profile_diff_section(campaign: Any, summary: dict, measurements: list) -> Section:
    return generic(campaign, summary)


@builder("cost")
def cost_section(campaign: Any, summary: dict, measurements: list) -> Section:
    sec = generic(campaign, summary)
    pts, env = cost_points(summary)
    if pts:
        def make() -> str:
            return plots.scatter_labeled(pts, "total power [kW]", "total cost",
                                         ("power envelope", env) if env else None)
        _plot(sec, "Cost against power", make)
    return sec


def cost_points(summary: dict) -> tuple[list[tuple[str, float, float, bool]], float | None]:
    """(name, kW, cost, fits power and budget) per platform, and the envelope in kW."""
    platforms = [p for p in summary.get("platforms") or [] if isinstance(p, dict)]
    env = (summary.get("requirement") or {}).get("power_envelope_kw")
    pts = [(p["name"], p["total_power_kw"], p["total_cost"],
            bool(p.get("fits_power")) and bool(p.get("fits_budget", True))) for p in platforms]
    return pts, env


@builder("frontend")
def frontend_section(campaign: Any, summary: dict, measurements: list) -> Section:
    sec = generic(campaign, {k: summary.get(k) for k in ("verdict", "notes") if summary.get(k)})
    points = summary.get("points") or []
    ratios = {(r.get("bytes"), r.get("cpu")): r for r in summary.get("ratios") or []}
    by_size: dict[tuple, dict] = {}
    for p in points:
        by_size.setdefault((p.get("bytes"), p.get("cpu")), {})[p.get("mode")] = p
    rows = []
    for (b, cpu), modes in sorted(by_size.items(), key=lambda kv: (kv[0][1] or -1, kv[0][0] or 0)):
        p4, p2, r = modes.get("4k") or {}, modes.get("2m") or {}, ratios.get((b, cpu)) or {}
        c4, c2, cr = p4.get("ci") or {}, p2.get("ci") or {}, r.get("ci") or {}
        rows.append([f"{(b or 0) / 1024:.0f} KiB", cpu if cpu is not None else "any",
                     p4.get("median_ns"), _ci_text(c4.get("low"), c4.get("high")), p2.get("median_ns"),
                     _ci_text(c2.get("low"), c2.get("high")),
                     None if not r else f"{r.get('ratio', 0):.3f} {_ci_text(cr.get('low'), cr.get('high'), '{:.3f}')}"])
    sec.tables = [Table(f"ns per dispatch against hot code size ({summary.get('kind', '')})", ["code size", "CPU",
                        "4 KiB pages", "CI", "2 MiB pages", "CI", "4K/2M"], rows, note=str(summary.get("huge_reason") or ""))]
    knees = summary.get("knees") or []
    sec.tables.append(Table("Knee of runtime against code size", ["pages", "CPU", "knee", "nearest reference",
                                                                  "slope before", "slope after"],
                            [[k.get("mode"), k.get("cpu") if k.get("cpu") is not None else "any",
                              f"{k['knee_bytes'] / 1024:.0f} KiB" if k.get("knee_bytes") else "no knee in range",
                              k.get("nearest"), k.get("slope_before"), k.get("slope_after")] for k in knees]))
    refs = summary.get("references") or {}
    if refs:
        sec.tables.append(Table("This CPU's front-end reach", ["reference", "bytes"],
                                [[k, f"{v / 1024:.0f} KiB" if v < 2**30 else f"{v / 2**30:.0f} GiB"]
                                 for k, v in refs.items()]))

    def make() -> str:
        series = {}
        for mode in ("4k", "2m"):
            ps = sorted((p for p in points if p.get("mode") == mode and p.get("cpu") is None), key=lambda p: p["bytes"])
            if ps:
                series[f"{mode.upper()} pages"] = ([p["bytes"] / 1024 for p in ps], [p["median_ns"] for p in ps])
        vl = {f"knee {k['mode']}": k["knee_bytes"] / 1024 for k in knees if k.get("knee_bytes")}
        for name, v in refs.items():
            if "iTLB reach 4K" in name and v / 1024 <= max((x for s in series.values() for x in s[0]), default=0) * 2:
                vl[name] = v / 1024
        return plots.lines(series, "hot code size [KiB]", "ns per dispatch", logx=True, vlines=vl)

    if points:
        _plot(sec, "Runtime against code size, 4 KiB and 2 MiB text pages", make)
    return sec


@builder("micro")
def micro_section(campaign: Any, summary: dict, measurements: list) -> Section:
    sec = generic(campaign, {"notes": summary.get("notes", [])})
    abis = summary.get("abis") or []
    cells = summary.get("cells") or []
    diffs = summary.get("diffs") or []
    benches: list[str] = []
    for c in cells:
        if c.get("bench") not in benches:
            benches.append(c.get("bench"))
    val = {(c.get("bench"), c.get("abi")): c for c in cells}
    dif = {(d.get("bench"), d.get("abi")): d for d in diffs}
    cols = ["operation"] + [f"{a} ns/op" for a in abis]
    others = [a for a in abis if a != "m64"]
    cols += [f"{a} vs m64" for a in others]
    rows = []
    for b in benches:
        row: list[object] = [b] + [(val.get((b, a)) or {}).get("median_ns") for a in abis]
        for a in others:
            d = dif.get((b, a))
            row.append("—" if not d else f"{d['pct']:+.1f} %" + (" *" if d.get("significant") else ""))
        rows.append(row)
    sec.tables = [Table("ns per operation per ABI (median)", cols, rows,
                        note="* significant after Holm's correction; percentages are time relative to -m64.")]
    for abi, why in (summary.get("skipped") or {}).items():
        sec.notes.append(f"{abi}: {why}")
    sec.verdict = micro_verdict(summary)
    if diffs:
        _plot(sec, "Time difference per operation against -m64 (seed 002's figure)", lambda: plots.bars_with_ci(
            [f"{d['bench']} ({d['abi']})" for d in diffs], [d["pct"] for d in diffs],
            ylabel="time vs -m64 [%]", highlight=[bool(d.get("significant")) for d in diffs], baseline=0.0,
            zero=True))
    return sec


def instances_verdict(summary: dict) -> str:
    """The study's own answer where its summary has one; an older summary's most throughput."""
    if summary.get("verdict"):
        # the optimum is no longer the highest median: the study's sentence says what it is and why
        return f"Answer: {summary['verdict']}"
    scans = summary.get("scans") or []
    if not scans:
        return ""
    best = max(scans, key=lambda s: s.get("optimum_throughput") or 0)
    return (f"Most throughput: {summary.get('optimum_throughput') or 0:.4g} {summary.get('unit', 'throughput')} "
            f"with {summary.get('optimum_n')} copies (policy {summary.get('optimum_policy')}); "
            f"{best.get('within_1pct_n')} copies already give 99 % of it.")


def micro_verdict(summary: dict) -> str:
    """How many operations differ between ABIs after Holm, the first six named."""
    diffs = summary.get("diffs") or []
    sig = [d for d in diffs if d.get("significant")]
    if diffs:
        named = "; ".join(f"{d['bench']} {d['abi']} {d['pct']:+.0f} %" for d in sig[:6])
        more = f"; and {len(sig) - 6} more" if len(sig) > 6 else ""
        return (f"{len(sig)} of {len(diffs)} operations differ significantly between ABIs"
                + (f": {named}{more}" if sig else "") + ".")
    cells = summary.get("cells") or []
    benches = sorted({c.get("bench") for c in cells})
    return f"{len(benches)} operations measured on {', '.join(summary.get('abis') or [])}." if cells else ""


# The studies whose stored summary has no "verdict" of its own: the sentence from the summary.
VERDICTS = {"instances": instances_verdict, "micro": micro_verdict}
