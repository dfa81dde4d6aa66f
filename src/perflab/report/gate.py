"""The gate's verdict in the formats CI systems read: JUnit XML, a Markdown table, JSON.

JUnit: the subset GitLab documents for unit test reports (testsuites/testsuite/testcase with
classname, name, file, time; failure with its text; system-out) and Jenkins' JUnit plugin
reads (testsuite tests/failures/errors/skipped/time/timestamp/hostname). One test case per
compared measure; GitLab uses classname as the suite shown and ignores a duplicate name, so
every (point, measure) has its own name. tests/data/junit-gitlab.xsd is the schema checked.
"""

from __future__ import annotations

import json
import socket
import xml.etree.ElementTree as ET
from datetime import datetime, timezone

from perflab.store import dumps, envelope
from perflab.studies.compare.keys import measure_title
from perflab.studies.gate.result import GateResult


def to_junit(result: GateResult) -> str:
    """JUnit XML text of a gate result."""
    cmp = result.compare
    # An inconclusive line fails the pipeline too (exit 3): JUnit shows it as a failure.
    failures = sum(ln.status in ("FAIL", "UNSURE") for ln in result.lines)
    tests = str(len(result.lines))
    root = ET.Element("testsuites", name="perflab gate", tests=tests, failures=str(failures),
                      errors="0", time="0")
    suite = ET.SubElement(root, "testsuite", {
        "name": f"perflab gate: campaign {cmp.b} vs baseline {result.baseline} (campaign {cmp.a})",
        "tests": tests, "failures": str(failures), "errors": "0", "skipped": "0", "time": "0",
        # UTC without a zone: the JUnit schema Jenkins publishes forbids one in timestamp.
        "timestamp": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S"),
        "hostname": socket.gethostname(),
    })
    props = ET.SubElement(suite, "properties")
    for k, v in (("baseline", result.baseline), ("baseline_campaign", cmp.a), ("campaign", cmp.b),
                 ("study", cmp.study_b), ("alpha", cmp.alpha), ("baseline_host", result.hosts[0]),
                 ("campaign_host", result.hosts[1])):
        ET.SubElement(props, "property", name=k, value=str(v))
    m = result.family
    for ln in result.lines:
        r = ln.row
        case = ET.SubElement(suite, "testcase", {
            "classname": f"perflab.{cmp.study_b}.{r.key}",
            "name": f"{measure_title(r.measure)} of {r.key}",
            "time": f"{r.median_b:.6f}" if r.measure == "wall_s" else "0",
        })
        text = ln.text(m)
        if ln.status in ("FAIL", "UNSURE"):
            kind = "perflab.regression" if ln.failed else "perflab.inconclusive"
            fail = ET.SubElement(case, "failure", message=text[:500], type=kind)
            fail.text = text + "\n" + result.summary
        out = ET.SubElement(case, "system-out")
        out.text = text
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(result: GateResult) -> str:
    """A Markdown table for a merge-request comment: verdict first, one row per measure."""
    cmp = result.compare
    head = {0: "**perflab gate: pass**", 1: "**perflab gate: FAIL**",
            3: "**perflab gate: UNSURE**"}[result.exit_status]
    out = [f"{head}: campaign {cmp.b} against baseline `{_md(result.baseline)}` (campaign {cmp.a}), "
           f"{cmp.study_b} study, alpha {cmp.alpha:g}.", ""]
    out.append("| | point | measure | median A | median B | change | B/A [CI] | p (Holm) | verdict |")
    out.append("|---|---|---|---:|---:|---:|---:|---:|---|")
    for ln in result.lines:
        r = ln.row
        lo, hi, level = ln.interval()
        mark = {"FAIL": "❌", "UNSURE": "⚠️", "pass": "✅", "info": "ℹ️"}[ln.status]
        p = f"{r.p_adjusted:.2g}" if ln.thresholds else f"{r.p_value:.2g} (not gated)"
        a, b, _, ratio = ln.shown()
        within = " within speeds" if ln.within_speeds else ""
        out.append(f"| {mark} | {_md(r.key)} | {_md(measure_title(r.measure))} | {a:.4g} | "
                   f"{b:.4g} | {100 * (ratio - 1):+.1f} %{within} | {ratio:.4f} [{lo:.4f}, {hi:.4f}] "
                   f"({100 * level:.0f}%) | {p} | {_md('; '.join([ln.verdict, *ln.notes]))} |")
    out.append("")
    out.append(_md(result.summary))
    for w in result.warnings:
        out.append(f"\n> warning: {_md(w)}")
    return "\n".join(out) + "\n"


def to_json(result: GateResult) -> str:
    """The gate result as indented JSON (every CI as {low, high, level}), in its versioned envelope."""
    return json.dumps(json.loads(dumps(envelope.wrap("gate", result.as_dict()))), indent=2) + "\n"
