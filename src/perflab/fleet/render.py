"""How a fleet's status and report look: terminal tables and a self-contained HTML page.

A platform of up to HOST_ROWS hosts is listed host by host; a larger one is shown by the
distribution of its host medians (quantiles; a histogram in HTML) and its slow hosts, so that a
farm of 100,000 hosts reads as a page, not 100,000 rows (every host stays in ``--json``).
"""

from __future__ import annotations

import html
from typing import Any

HOST_ROWS = 40


def _num(x: Any, digits: int = 4) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}g}"
    return str(x)


def _level(ci: dict) -> str:
    """' 98% CI': the level the interval really has (an order-statistic interval of few runs has less)."""
    return f" {ci['level']:.0%} CI" if ci.get("level") is not None else ""


def _headline(h: dict | None) -> str:
    if not h:
        return "-"
    if "throughput" in h:
        ci = h.get("ci")
        ci_s = f" [{_num(ci['low'])}, {_num(ci['high'])}]{_level(ci)}" if ci else ""
        return f"{_num(h['throughput'])}{ci_s} at N={h.get('optimum_n')} ({h.get('policy')})"
    text = f"{_num(h.get('median'))} {h.get('quantity', '')}"
    if h.get("ci"):
        text += f" [{_num(h['ci']['low'])}, {_num(h['ci']['high'])}]{_level(h['ci'])}"
    if h.get("slow_cores"):
        text += f"; slow cores: {', '.join(str(s['core']) for s in h['slow_cores'])}"
    return text


def _campaigns(h: dict) -> str:
    """A host's campaign, or its visits' campaigns and how many of its visits finished."""
    if not h.get("visits"):
        return str(h["campaign_id"])
    done = [str(v["campaign_id"]) for v in h["visits"] if v["status"] == "done"]
    return f"{', '.join(done)} ({len(done)} of {len(h['visits'])} visits)"


def status_table(name: str, slots: list, console) -> None:
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=escape(f"perflab fleet {name}: {len(slots)} slots"), title_justify="left")
    for col in ("slot", "state", "job", "host", "campaign", "why"):
        table.add_column(col)
    for s in slots:
        table.add_row(escape(s.slot), s.state, escape(s.job or "-"), escape(s.host or "-"),
                      str(s.campaign_id or "-"), escape(s.reason or ""))
    console.print(table)
    counts: dict[str, int] = {}
    for s in slots:
        counts[s.state] = counts.get(s.state, 0) + 1
    console.print(", ".join(f"{v} {k}" for k, v in sorted(counts.items())), highlight=False, soft_wrap=True)


def _slow_cores_lines(rep: dict[str, Any]) -> list[str]:
    """The slow cores of a cores fleet, per host (each host's own verdict on its CPUs)."""
    n = sum(1 for h in rep["hosts"] if h["status"] == "done")
    if not rep["slow_cores"]:
        return [f"no slow core: no CPU of the {n} finished hosts is persistently slower than the "
                "host's other CPUs (each host's own cores verdict)"]
    hosts = sorted({c["host"] for c in rep["slow_cores"]})
    lines = [f"slow cores on {len(hosts)} of {n} hosts (each host's CPUs against each other):"]
    for c in rep["slow_cores"]:
        cpus = ",".join(str(x) for x in c.get("cpus") or ())
        lines.append(f"  {c['host']}: core {c['core']} (CPUs {cpus}): cost {_num(c.get('ratio'))} x the median "
                     f"of the host's other CPUs, slower in {c.get('slower_rounds')} of {c.get('rounds')} rounds, "
                     f"Holm p {_num(c.get('p_adjusted'), 2)}")
    return lines


def _spread_line(plat: dict[str, Any], console) -> None:
    if plat.get("spread"):
        sp = plat["spread"]
        console.print(f"  spread of host medians: min {_num(sp['min'])}, p10 {_num(sp['p10'])}, "
                      f"p90 {_num(sp['p90'])}, max {_num(sp['max'])}; IQR {_num(sp['iqr_pct'], 3)}% "
                      "of the median", highlight=False, soft_wrap=True)


def report_terminal(rep: dict[str, Any], console) -> None:
    from rich.markup import escape
    from rich.table import Table

    for plat in rep["platforms"]:
        title = (f"{plat['platform']}: {plat['n_hosts']} hosts, median {_num(plat.get('median'))} "
                 f"{plat.get('quantity') or ''}")
        if plat["n_hosts"] > HOST_ROWS:
            console.print(escape(title + f" (hosts listed in --json; {len(plat['slow_hosts'])} slow, "
                                 f"{len(plat.get('not_tested') or [])} not tested)"), highlight=False, soft_wrap=True)
            _spread_line(plat, console)
            continue
        table = Table(title=escape(title), title_justify="left")
        for col in ("host", "status", "campaign", "headline"):
            table.add_column(col)
        for h in rep["hosts"]:
            if h["platform"] == plat["platform"] and h["status"] == "done":
                mark = " (slow)" if h["host"] in plat["slow_hosts"] else ""
                table.add_row(escape(h["host"] + mark), h["status"], escape(_campaigns(h)),
                              escape(_headline(h["headline"])))
        console.print(table)
        _spread_line(plat, console)
        if plat.get("time_note"):
            console.print(escape(f"  {plat['time_note']}"), highlight=False, soft_wrap=True)
        for h in rep["hosts"]:
            if h["platform"] == plat["platform"] and h.get("other_slots"):
                console.print(escape(f"  {h['host']} also ran slot(s) {', '.join(o['slot'] for o in h['other_slots'])}"
                                     f" of this fleet: one node is one host; slot {h['slot']} stands for it"),
                              highlight=False, soft_wrap=True)
    if rep["slow_hosts"]:
        console.print("slow hosts:", style="bold")
        for s in rep["slow_hosts"]:
            console.print(escape(f"  {s['host']}: {s['ratio']:.3f} x its peers' throughput "
                                 f"(CI {s['ci']['low']:.3f}-{s['ci']['high']:.3f}, level >= "
                                 f"{s['ci']['level']:.2f}); {s['evidence']}"), highlight=False, soft_wrap=True)
    elif not any(h["status"] == "done" for h in rep["hosts"]):
        console.print("no host has finished: nothing to compare yet", highlight=False, soft_wrap=True)
    elif rep.get("cannot_tell"):
        for c in rep["cannot_tell"]:
            console.print(escape(f"cannot tell whether a host of {c['platform']} is slow: {c['why']}; {c['do']}"),
                          highlight=False, soft_wrap=True)
    else:
        n = sum(1 for h in rep["hosts"] if h["status"] == "done")
        named = [p["time_test"]["detectable_slowdown"] for p in rep["platforms"]
                 if (p.get("time_test") or {}).get("detectable_slowdown") is not None]
        seen = (f"; these comparisons name a host {max(named):.0%} or more slower than its peers" if named
                else "")
        console.print(f"no slow host: none of {n} hosts is significantly below its platform's peers{seen} "
                      "(this does not show that all hosts are equal, only that no difference above "
                      "the minimum effect was found)", highlight=False, soft_wrap=True)
    if "slow_cores" in rep:
        for line in _slow_cores_lines(rep):
            console.print(escape(line), highlight=False, soft_wrap=True)
    failed = [h for h in rep["hosts"] if h["status"] == "failed"]
    for h in failed:
        where = f"slot {h['slot']}" if h["host"] == f"slot {h['slot']}" else f"{h['host']} (slot {h['slot']})"
        console.print(escape(f"failed: {where}, job {h['job']}: {h.get('error', '')}"),
                      highlight=False, soft_wrap=True)
    for m in rep["missing"]:
        console.print(escape(f"missing: slot {m['slot']} ({m['status']}, job {m['job']}) {m['reason']}"),
                      highlight=False, soft_wrap=True)


def _histogram_svg(plat: dict[str, Any], slow: list[dict]) -> str:
    """The platform's host medians as bars; its slow hosts as red ticks at their medians."""
    hist = plat.get("histogram")
    if not hist or not hist["counts"]:
        return ""
    w, h, counts, edges = 320, 90, hist["counts"], hist["edges"]
    lo, hi, top = edges[0], edges[-1], max(counts) or 1
    span = (hi - lo) or 1.0
    bar = w / len(counts)
    out = [f"<svg width='{w}' height='{h + 16}' role='img'><title>host medians: {len(counts)} bins from "
           f"{_num(lo)} to {_num(hi)}</title>"]
    for i, c in enumerate(counts):
        bh = h * c / top
        out.append(f"<rect x='{i * bar:.1f}' y='{h - bh:.1f}' width='{max(bar - 1, 1):.1f}' height='{bh:.1f}' "
                   f"fill='#7a9'><title>{c} hosts in [{_num(edges[i])}, {_num(edges[i + 1])}]</title></rect>")
    for s in slow:
        x = w * (s["median"] - lo) / span
        out.append(f"<line x1='{x:.1f}' x2='{x:.1f}' y1='0' y2='{h}' stroke='#c00'><title>"
                   f"{html.escape(s['host'])}: {_num(s['median'])}</title></line>")
    out.append(f"<text x='0' y='{h + 13}' font-size='11'>{_num(lo)}</text>"
               f"<text x='{w}' y='{h + 13}' font-size='11' text-anchor='end'>{_num(hi)}</text></svg>")
    return "".join(out)


def _platforms_side_by_side(rep: dict[str, Any]) -> list[str]:
    e = html.escape
    plats = rep["platforms"]
    rows = [("hosts", lambda p: str(p["n_hosts"])),
            ("quantity", lambda p: e(p.get("quantity") or "-")),
            ("median of host medians", lambda p: e(_num(p.get("median"))) + (
                f" [{e(_num(p['ci']['low']))}, {e(_num(p['ci']['high']))}] ({p['ci']['level']:.0%})"
                if p.get("ci") else "")),
            ("p10 / p90", lambda p: e(f"{_num(p['spread']['p10'])} / {_num(p['spread']['p90'])}")
             if p.get("spread") else "-"),
            ("IQR", lambda p: e(f"{_num(p['spread']['iqr_pct'], 3)}% of the median") if p.get("spread") else "-"),
            ("host medians", lambda p: _histogram_svg(p, [s for s in rep["slow_hosts"]
                                                          if s["platform"] == p["platform"]])),
            ("slow hosts", lambda p: e(", ".join(p["slow_hosts"]) or "none")),
            ("not tested", lambda p: e(", ".join(p.get("not_tested") or []) or "none"))]
    out = ["<table><tr><th></th>" + "".join(f"<th>{e(p['platform'])}</th>" for p in plats) + "</tr>"]
    for name, cell in rows:
        out.append(f"<tr><th>{e(name)}</th>" + "".join(f"<td>{cell(p)}</td>" for p in plats) + "</tr>")
    out.append("</table>")
    out += [f"<p>{e(p['platform'])}: {e(p['time_note'])}</p>" for p in plats if p.get("time_note")]
    return out


def report_html(rep: dict[str, Any]) -> str:
    e = html.escape
    out = [f"<!doctype html><meta charset='utf-8'><title>perflab fleet {e(rep['fleet'])}</title>",
           "<style>body{font-family:sans-serif}table{border-collapse:collapse}"
           "td,th{border:1px solid #ccc;padding:2px 6px;vertical-align:top}.slow{background:#fdd}</style>",
           f"<h1>perflab fleet {e(rep['fleet'])}</h1>"]
    out += _platforms_side_by_side(rep)
    out.append("<h2>Slow hosts</h2><ul>")
    out += [f"<li>{e(s['host'])} ({e(s['platform'])}): {s['ratio']:.3f} x peers (CI {s['ci']['low']:.3f}-"
            f"{s['ci']['high']:.3f}, level &ge; {s['ci']['level']:.2f}); {e(s['evidence'])}</li>"
            for s in rep["slow_hosts"]]
    if not rep["slow_hosts"]:
        out.append("<li>none: no host is significantly below its platform's peers by more than the minimum "
                   "effect (which does not show that the hosts are equal)</li>")
    out.append("</ul>")
    for plat in rep["platforms"]:
        if plat["n_hosts"] > HOST_ROWS:
            continue
        out.append(f"<h2>{e(plat['platform'])}</h2>")
        out.append("<table><tr><th>host</th><th>campaign</th><th>headline</th></tr>")
        for h in rep["hosts"]:
            if h["platform"] == plat["platform"] and h["status"] == "done":
                cls = " class='slow'" if h["host"] in plat["slow_hosts"] else ""
                out.append(f"<tr{cls}><td>{e(h['host'])}</td><td>{e(_campaigns(h))}</td>"
                           f"<td>{e(_headline(h['headline']))}</td></tr>")
        out.append("</table>")
    if any(p["n_hosts"] > HOST_ROWS for p in rep["platforms"]):
        out.append(f"<p>Platforms of more than {HOST_ROWS} hosts are shown by their distribution; every "
                   "host's headline is in the report's JSON (--json).</p>")
    if "slow_cores" in rep:
        out.append("<h2>Slow cores</h2><ul>")
        lines = _slow_cores_lines(rep)
        out += [f"<li>{e(ln.strip())}</li>" for ln in (lines[1:] or lines)]
        out.append("</ul>")
    out.append("<h2>Failed and missing</h2><ul>")
    out += [f"<li>{e(h['host'])} (slot {e(h['slot'])}): {e(h.get('error', ''))}</li>"
            for h in rep["hosts"] if h["status"] == "failed"]
    out += [f"<li>slot {e(m['slot'])}: {e(m['status'])} {e(m['reason'])}</li>" for m in rep["missing"]]
    if not rep["missing"] and not any(h["status"] == "failed" for h in rep["hosts"]):
        out.append("<li>none</li>")
    out.append("</ul>")
    return "\n".join(out) + "\n"
