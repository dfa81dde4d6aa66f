"""Render the HTML report in headless Chromium (no network) and check it visibly."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from perflab.model import RunResult
from perflab.report.build import build_report, select_campaigns
from perflab.report.render import to_html
from perflab.store import open_store

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--enable-logging=stderr", "--v=0"]


def chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args],
                          capture_output=True, text=True, timeout=120)


def console_errors(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if "CONSOLE" in ln or "Uncaught" in ln]


def check_rendered(tmp_path, html_path: str, section_ids: list[str], screenshot: str | None = None) -> None:
    """The summary table is the first section, every section is there with non-empty plots, the
    console stayed quiet, and the page is not blank; the top of the page saved as a small PNG."""
    import re

    url = "file://" + os.path.abspath(html_path)
    dom = chromium(tmp_path, "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert console_errors(dom.stderr) == []
    ids = re.findall(r'<section id="([\w-]+)"', dom.stdout)
    assert ids[0] == "summary", ids
    for sid in section_ids:
        assert sid in ids, sid
    summary = dom.stdout[dom.stdout.index('<section id="summary"'):].split("</section>", 1)[0]
    for sid in ids[1:]:
        if sid != "machine":
            assert f'href="#{sid}"' in summary, f"no summary row for {sid}"
    for sec in re.findall(r'<section id="[\w-]+".*?</section>', dom.stdout, re.S):
        for svg in re.findall(r"<svg.*?</svg>", sec, re.S):
            assert svg.count("<path") >= 5, "an empty plot"
    png = tmp_path / "shot.png"
    shot = chromium(tmp_path, f"--screenshot={png}", "--window-size=1200,2400", url)
    assert shot.returncode == 0 and png.exists(), shot.stderr[-2000:]
    import matplotlib.image as mpimg

    img = mpimg.imread(str(png))
    assert img.shape[0] >= 2000 and img.shape[1] >= 1100
    # Non-blank: a real page has text and plots, so many pixels differ from the background.
    background = img[5, 5, :3]
    differing = (abs(img[:, :, :3] - background).sum(axis=2) > 0.1).mean()
    assert differing > 0.01, f"screenshot looks blank ({differing:.4f} of pixels differ)"
    if screenshot:
        top = tmp_path / "top.png"
        shot = chromium(tmp_path, f"--screenshot={top}", "--window-size=1100,700", url)
        assert shot.returncode == 0 and top.exists()
        shutil.copy(top, screenshot)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (scripts/install-system-packages.sh installs it)")
def test_report_renders_in_headless_chromium(tmp_path):
    store = open_store(str(tmp_path / "r.db"))
    host = store.add_host({"hostname": "testhost", "cpu_model": "Test CPU"},
                          {"counts": {"sockets": 1, "cores": 2, "threads": 2, "numa_nodes": 1}})
    cid = store.start_campaign("run", {}, host_id=host)
    for i, w in enumerate([1.0, 1.1, 1.05, 0.98]):
        store.add_measurement(cid, RunResult(int(w * 1e9), w, 0.0, 1000, 1, 0, 1, 1, 0), {}, i, "sleep 1")
    store.finish_campaign(cid, "done", {"verdict": "sleep 1 took 1.03 s",
                                        "results": [{"command": "sleep 1", "median": 1.03}]})
    assert store.campaign(cid).status == "done"
    report = build_report(store, select_campaigns(store, []))
    # a plot, so the screenshot has graphics as well as text
    from perflab.report.model import Plot
    from perflab.report.plots import estimates

    report.sections[0].plots.append(Plot("t", estimates(["a", "b"], [1.0, 1.2], [0.9, 1.1], [1.1, 1.3], "wall time [s]",
                                                        "95% CI")))
    path = tmp_path / "report.html"
    path.write_text(to_html(report))
    check_rendered(tmp_path, str(path), ["machine", f"run-{cid}"])


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (scripts/install-system-packages.sh installs it)")
def test_wide_tables_scroll_in_their_box_and_the_page_never_overflows_at_800px(tmp_path):
    """A table of 14 long columns: at 800 px the page is no wider than the window; the table's
    own box scrolls. Measured by the browser's layout (a copy of the page with a probe script)."""
    import re

    from perflab.report.model import Report, Section, Table

    cols = [f"a rather long column name {i}" for i in range(14)]
    sec = Section("wide-1", "Wide", "a verdict", tables=[Table("wide", cols, [[123456.789] * 14] * 3)])
    html = to_html(Report("wide", "now", "0", None, [sec]))
    # the answers and the wide table each in a scroll box; the report itself stays script-free
    assert html.count('<div class="scroll"><table') == 2 and "<script" not in html
    probe = ("<script>window.addEventListener('load', () => { const d = document.documentElement;"
             " const box = document.querySelector('#wide-1 .scroll');"
             " document.body.setAttribute('data-overflow', d.scrollWidth - window.innerWidth);"
             " document.body.setAttribute('data-box', box.scrollWidth - box.clientWidth); });</script>")
    path = tmp_path / "wide.html"
    path.write_text(html.replace("</body>", probe + "</body>"))
    dom = chromium(tmp_path, "--window-size=800,600", "--dump-dom", "file://" + str(path))
    assert dom.returncode == 0, dom.stderr[-2000:]
    overflow = int(re.search(r'data-overflow="(-?\d+)"', dom.stdout).group(1))
    box = int(re.search(r'data-box="(-?\d+)"', dom.stdout).group(1))
    assert overflow <= 0, f"the page is {overflow} px wider than the window"
    assert box > 0, "the wide table did not scroll inside its box"
