"""Report and compare on a real SQLite store filled with synthetic measurements (through the
command line: tests/cli/test_report.py)."""

from __future__ import annotations

import random

import pytest

from perflab.model import RunResult
from perflab.report.build import build_report, select_campaigns
from perflab.report.render import to_html, to_markdown
from perflab.store import open_store
from perflab.studies.compare.study import CompareConfig, run_compare

EVIL = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def _result(wall_s: float, rss: int = 1000, **metrics: float) -> RunResult:
    return RunResult(wall_ns=int(wall_s * 1e9), user_s=wall_s * 0.9, sys_s=0.01, maxrss_kb=rss,
                     minflt=10, majflt=0, nvcsw=1, nivcsw=1, exit_code=0, metrics=dict(metrics))


@pytest.fixture()
def store(tmp_path):
    s = open_store(str(tmp_path / "r.db"))
    yield s
    s.close()


def _campaign(store, study: str, walls: list[float], label: str = "cmd", summary: dict | None = None,
              host: int | None = None) -> int:
    cid = store.start_campaign(study, {"label": label}, host_id=host)
    for i, w in enumerate(walls):
        store.add_measurement(cid, _result(w, events_per_s=100.0 / w), {"n": 1}, rep=i, label=label)
    store.finish_campaign(cid, "done", summary)
    return cid


def test_compare_finds_a_planted_difference_and_not_a_null_one(store):
    rng = random.Random(1)
    a = _campaign(store, "run", [1.0 + rng.gauss(0, 0.01) for _ in range(20)])
    b = _campaign(store, "run", [1.1 + rng.gauss(0, 0.01) for _ in range(20)])
    c = _campaign(store, "run", [1.0 + rng.gauss(0, 0.01) for _ in range(20)])
    res = run_compare(CompareConfig(a, b), store)
    wall = next(r for r in res.rows if r.measure == "wall_s")
    assert wall.significant and 1.07 < wall.ratio < 1.13 and wall.lo < wall.ratio < wall.hi
    assert wall.better == "A"
    rate = next(r for r in res.rows if r.measure == "metric:events_per_s")
    # no primary metric declared: a direction is not guessed from the name (B lower, not "A better")
    assert rate.significant and rate.ratio < 0.95 and rate.better == "" and rate.verdict_cell == "B lower"
    same = run_compare(CompareConfig(a, c), store)
    assert not any(r.significant for r in same.rows if r.measure == "wall_s")
    assert "no significant difference" in same.verdict or "maxrss" not in same.verdict


def test_report_escapes_workload_text_and_is_self_contained(store):
    host = store.add_host({"hostname": "h<b>1</b>", "cpu_model": EVIL}, {"counts": {"sockets": 1}})
    summary = {"verdict": f"slowest command: {EVIL}", "results": [{"command": EVIL, "median": 1.0}],
               "tables": [{"title": EVIL, "columns": ["a", EVIL], "rows": [[EVIL, 1.5]]}]}
    _campaign(store, "run", [1.0, 1.1, 1.05], label=EVIL, summary=summary, host=host)
    report = build_report(store, select_campaigns(store, []))
    html = to_html(report)
    assert "<script>" not in html and "onerror=alert" not in html.replace("onerror=alert(1)&gt;", "")
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html
    assert "<img" not in html
    # self-contained: no external resources
    for needle in ("http://", "https://", "src=", "<link", "@import"):
        assert needle not in html.replace("&lt;img src=x", ""), needle
    md = to_markdown(report)
    assert "<script>" not in md and "&lt;script>" in md and "&gt;" not in md


def test_plots_draw_points_with_ci_and_ratios_on_a_log_axis_centred_on_1():
    import re

    from perflab.report.plots import estimates, ratio_axis

    points = estimates(["a", "b"], [1.00, 1.02], [0.99, 1.01], [1.01, 1.03], ylabel="wall time [s]", level="95% CI")
    assert 'id="patch_' not in points.split("</defs>")[-1] or "bar" not in points  # no bars
    assert re.search(r"<text\b[^>]*>[^<]*95% CI", points) or "95% CI" in points  # the level in the legend
    ratio = ratio_axis(["b", "c"], [1.5, 0.8], [1.2, 0.6], [1.9, 1.1], ["worse", "not significant"],
                       "ratio (log scale)", "96% CI")
    assert 'id="mark-worse-0"' in ratio and 'id="mark-not-significant-1"' in ratio
    assert "worse (significant)" in ratio and "not significant" in ratio  # the legend names each finding
    # centred on 1: the axis reaches as far below 1 as above (1.9 -> 1/1.9 at least)
    ticks = [float(t) for t in re.findall(r"<!-- ([\d.]+) -->", ratio)] or None
    assert ticks is None or (min(ticks) < 1 < max(ticks))


def test_cells_have_three_significant_digits():
    from perflab.report.render import format_cell, is_text

    assert [format_cell(v) for v in (0.012345, 1.23456, 123.456, 61234.5, 1234567.0, 12345, None, True)] == [
        "0.0123", "1.23", "123", "61,200", "1.23e+06", "12,345", "—", "yes"]
    assert is_text("sleep 0.1") and not is_text("1,234") and not is_text(1.5)


def test_run_report_answers_first_with_evidence_and_its_level(store):
    from perflab.measure.executor import MockExecutor
    from perflab.platform.machine import Machine
    from perflab.platform.topology import Topology
    from perflab.studies import run_study
    from perflab.studies.run import study as run_mod

    machine = Machine(topology=Topology(cpus=(), cores=(), sockets=(), nodes=()), metadata={"hostname": "t"})
    config = run_mod.RunConfig(commands=(run_mod.Command("sleep 0.2", ("sleep", "0.2")),
                                         run_mod.Command("sleep 0.1", ("sleep", "0.1"))), runs=6)
    res = run_study(run_mod, config, store, MockExecutor(), machine=machine)
    report = build_report(store, [store.campaign(res.campaign_id)])
    (answer,) = report.answers
    assert answer.question == "How long does the workload take?" and answer.key == f"run-{res.campaign_id}"
    assert answer.evidence == ("sleep 0.2: median 0.2 s [0.2, 0.2] s (97% CI); "
                               "sleep 0.1: ×0.5 [0.5, 0.5] (96% CI) of the reference")
    assert answer.basis == "6 runs per command, 97% CI" and answer.program == "sleep 0.2, sleep 0.1"
    (sec,) = report.sections
    assert [p.title.split(" (")[0] for p in sec.plots] == ["Median wall time with its CI",
                                                            "wall time relative to the reference"]
    html = to_html(report)
    assert html.index('<section id="summary"') < html.index(f'<section id="run-{res.campaign_id}"')
    md = to_markdown(report)
    assert md.index("## Answers") < md.index("## Timing")


def test_plots_keep_text_as_text_and_say_what_they_show(store):
    """Every figure: role=img, a <title>, a <desc> with the finding, labels as searchable <text>."""
    import re

    from perflab.measure.executor import MockExecutor
    from perflab.platform.machine import Machine
    from perflab.platform.topology import Topology
    from perflab.studies import run_study
    from perflab.studies.run import study as run_mod

    machine = Machine(topology=Topology(cpus=(), cores=(), sockets=(), nodes=()), metadata={"hostname": "t"})
    config = run_mod.RunConfig(commands=(run_mod.Command("sleep 0.2", ("sleep", "0.2")),
                                         run_mod.Command("sleep 0.1", ("sleep", "0.1"))), runs=6)
    run_study(run_mod, config, store, MockExecutor(), machine=machine)
    html = to_html(build_report(store, select_campaigns(store, [])))
    svgs = re.findall(r"<svg\b.*?</svg>", html, re.S)
    assert svgs
    for svg in svgs:
        head = svg[:svg.index(">") + 1]
        assert 'role="img"' in head and "aria-labelledby=" in head
        ids = re.search(r'aria-labelledby="(\S+) (\S+)"', head).groups()
        title = re.search(rf'<title id="{ids[0]}">(.+?)</title>', svg).group(1)
        desc = re.search(rf'<desc id="{ids[1]}">(.+?)</desc>', svg).group(1)
        assert title and desc
        # the axis label is text a reader can find, not glyph outlines
        assert re.search(r"<text\b[^>]*>[^<]*(wall time|median)", svg), "axis label not kept as text"
        assert "DejaVuSans-" not in svg  # no glyph definitions
    assert len({re.search(r'aria-labelledby="(\S+) ', s).group(1) for s in svgs}) == len(svgs)
    # rendering twice (a report written as HTML and again) keeps one title and one desc
    report = build_report(store, select_campaigns(store, []))
    once = to_html(report)
    assert once.count("<title id=") == len(svgs)
    assert once.count("<title id=") == to_html(report).count("<title id=")


def test_the_compare_page_uses_the_reports_one_stylesheet(tmp_path, store):
    """One stylesheet (templates/style.css) for the report and the compare page; its tables scroll
    in their boxes and its plots say what they show."""
    from importlib.resources import files

    from perflab.report.html.compare import compare_html

    a = _campaign(store, "run", [1.0, 1.01, 0.99, 1.0, 1.02, 0.98])
    b = _campaign(store, "run", [2.0, 2.01, 1.99, 2.0, 2.02, 1.98])
    res = run_compare(CompareConfig(a, b), store)
    page = compare_html(res, [store.campaign(a), store.campaign(b)], ["h", "h"])
    css = files("perflab.report").joinpath("templates/style.css").read_text()
    assert css.strip() in page and css.strip() in to_html(build_report(store, select_campaigns(store, [])))
    assert page.count('<div class="scroll"><table') == page.count("<table")
    assert page.count('role="img"') == page.count("<svg") > 0
