"""The report's flame graph in a real browser: headless Chromium driven over the DevTools
protocol (a pipe, no network), with real mouse events: zoom by clicking a frame, search by
typing, the tooltip by hovering; on a real recording of minihlt with frame-pointer stacks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from perflab.kernels.minihlt import build_minihlt
from perflab.measure.window import Window
from perflab.measure.window_perf import PerfWindowRecorder
from perflab.model import Workload
from perflab.report.build import build_report, select_campaigns
from perflab.report.render import to_html
from perflab.store import open_store
from perflab.studies import run_study
from perflab.studies.profile import study as profile
from perflab.studies.profile.stacks import Node, tree
from perflab.studies.profile.window import event_markers

from tests.test_report_browser import CHROMIUM, FLAGS, check_rendered

pytestmark = [pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed"),
              pytest.mark.skipif(shutil.which("perf") is None, reason="perf not installed")]


class Browser:
    """Chromium with --remote-debugging-pipe: DevTools commands as NUL-terminated JSON on fds 3/4."""

    def __init__(self, tmp_path: Path, url: str, size: str = "1200,900") -> None:
        to_r, self._to = os.pipe()
        self._from, from_w = os.pipe()

        def fds() -> None:  # dup first: a pipe end may itself be fd 3 or 4
            a, b = os.dup(to_r), os.dup(from_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen([CHROMIUM, *FLAGS, "--remote-debugging-pipe", f"--window-size={size}",
                                      f"--user-data-dir={tmp_path / 'cdp-profile'}", url],
                                     preexec_fn=fds, close_fds=False, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        self._buf, self._n, self.session = b"", 0, None
        page = next(t for t in self.send("Target.getTargets")["targetInfos"] if t["type"] == "page")
        self.session = self.send("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})["sessionId"]

    def send(self, method: str, params: dict | None = None) -> dict:
        self._n += 1
        msg = {"id": self._n, "method": method, "params": params or {}}
        if self.session:
            msg["sessionId"] = self.session
        os.write(self._to, json.dumps(msg).encode() + b"\0")
        while True:
            while b"\0" not in self._buf:
                chunk = os.read(self._from, 1 << 16)
                assert chunk, "chromium closed the DevTools pipe"
                self._buf += chunk
            raw, self._buf = self._buf.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._n:
                assert "error" not in reply, reply
                return reply["result"]

    def js(self, expression: str):
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        assert "exceptionDetails" not in r, r["exceptionDetails"]
        return r["result"].get("value")

    def wait(self, expression: str, timeout: float = 30.0) -> None:
        end = time.monotonic() + timeout
        while not self.js(f"!!({expression})"):
            assert time.monotonic() < end, f"never true: {expression}"
            time.sleep(0.1)

    def mouse(self, kind: str, x: float, y: float) -> None:
        self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def click(self, selector_js: str) -> None:
        """A real mouse click at the middle of the element the expression gives."""
        self.js(f"({selector_js}).scrollIntoView({{block: 'center'}})")
        x, y = self.js(f"(() => {{ const r = ({selector_js}).getBoundingClientRect(); "
                       "return [r.left + r.width / 2, r.top + r.height / 2]; })()")
        self.mouse("mouseMoved", x, y)
        self.mouse("mousePressed", x, y)
        self.mouse("mouseReleased", x, y)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        os.close(self._to)
        os.close(self._from)


def frame_js(name: str) -> str:
    """The frame element named `name` (a marked frame's text starts with "* ")."""
    return f"[...document.querySelectorAll('.flame-frame')].find(e => e.textContent.replace(/^\\* /, '') === {json.dumps(name)})"


def matched_share(root: Node, needle: str) -> float:
    """Samples under frames whose name holds needle, each sample once: what the search must say."""
    def walk(n: Node, under: bool) -> float:
        hit = needle.lower() in n.name.lower() and n.name != "all"
        return (n.total if hit and not under else 0.0) + sum(walk(c, under or hit) for c in n.children.values())
    return walk(root, False) / root.total


def test_flame_graph_zooms_searches_and_tells_in_chromium(tmp_path):
    # frame pointers in minihlt: --call-graph fp walks from each sample up to main
    minihlt = str(build_minihlt(("-O2", "-g", "-fno-omit-frame-pointer")).path)
    store = open_store(str(tmp_path / "p.db"))
    start, stop = event_markers(1)
    cfg = profile.ProfileConfig(
        workload=Workload(name="minihlt", argv=(minihlt, "--events", "4", "--static-mb", "16")),
        window=Window(start, stop), call_graph="fp", repeat=3, annotate_top=0, out_dir=str(tmp_path / "out"))
    res = run_study(profile, cfg, store, PerfWindowRecorder())
    assert res.flame is not None and res.samples > 20
    # the widest frames under main are minihlt's own functions. A frame-pointer walk loses a
    # sample's callers where it lands in code built without frame pointers (libm, libc's
    # malloc: a root of "[unknown]"), and glibc's own start-up frames may be skipped, so main
    # can sit under two roots: the stacks are cut at main and the rest merged.
    under: Counter[str] = Counter()
    for stack, count in res.stacks.items():
        frames = stack.split(";")
        if "main" in frames and frames[-1] != "main":
            under[";".join(frames[frames.index("main") + 1:])] += count
    assert sum(under.values()) >= 0.5 * res.samples
    widest = sorted((n for _, n in tree(under).walk()), key=lambda n: -n.total)[1:4]
    assert all(n.name.startswith(("mh::", "(anonymous namespace)::")) for n in widest), [n.name for n in widest]

    html_path = tmp_path / "report.html"
    html_path.write_text(to_html(build_report(store, select_campaigns(store, [str(res.campaign_id)]))))
    check_rendered(tmp_path, str(html_path), [f"profile-{res.campaign_id}"])  # console quiet, not blank
    b = Browser(tmp_path, "file://" + str(html_path))
    try:
        b.wait("document.querySelector('.flame') && document.querySelector('.flame').flame")
        shown = b.js("[...document.querySelectorAll('.flame-frame')].filter(e => e.style.display !== 'none').length")
        assert shown >= 10
        # search: type into the box; the frames that match light up and their share is said
        b.js("(() => { const s = document.querySelector('.flame-search'); s.focus(); })()")
        b.send("Input.insertText", {"text": "Geometry"})
        hits = b.js("[...document.querySelectorAll('.flame-hit')].map(e => e.textContent)")
        assert hits and all("Geometry" in h for h in hits)
        found = b.js("document.querySelector('.flame-found').textContent")
        want = matched_share(res.flame.root, "Geometry")
        assert found.startswith(f"{len(hits)} frames match, {100 * want:.1f} %"), (found, want)
        # zoom: a real click on the widest frame under main fills the width; frames outside its
        # subtree are hidden, its callers are listed
        target = widest[0].name
        before = b.js(f"({frame_js(target)}).getBoundingClientRect().width")
        b.click(frame_js(target))
        graph_w = b.js("document.querySelector('.flame-graph').clientWidth")
        after = b.js(f"({frame_js(target)}).getBoundingClientRect().width")
        assert after >= graph_w - 2 and before < after
        info = b.js("document.querySelector('.flame-info').textContent")
        assert f"selected: {target}" in info and "main" in info.split("callers:")[1]
        # hovering a frame shows its samples, share and the interval over the 3 windows
        x, y = b.js(f"(() => {{ const r = ({frame_js(target)}).getBoundingClientRect(); "
                    "return [r.left + 20, r.top + 5]; })()")
        b.mouse("mouseMoved", x, y)
        tip = b.js("(() => { const t = document.querySelector('.flame-tip'); return t.hidden ? '' : t.textContent; })()")
        assert "samples" in tip and "95 % interval over 3 windows" in tip
        # reset: the root fills the width again and the zoomed frame is back to its share
        b.click("document.querySelector('.flame-reset')")
        again = b.js(f"({frame_js(target)}).getBoundingClientRect().width")
        assert abs(again - before) <= 2
    finally:
        b.close()
