"""End-to-end: profile only event K of minihlt (the built-in reference workload)."""

import re
import shutil
from pathlib import Path

import pytest

from perflab.kernels.minihlt import build_minihlt
from perflab.measure.window import Window
from perflab.measure.window_perf import PerfWindowRecorder
from perflab.model import Workload
from perflab.store import open_store
from perflab.studies import run_study
from perflab.studies.profile import study as profile
from perflab.studies.profile.parse import read_samples
from perflab.studies.profile.window import event_markers

pytestmark = pytest.mark.skipif(shutil.which("perf") is None, reason="perf not installed")


@pytest.fixture(scope="module")
def minihlt():
    return str(build_minihlt(("-O2", "-g")).path)


def test_profile_only_event_k_of_minihlt(minihlt, tmp_path):
    store = open_store(str(tmp_path / "p.db"))
    start, stop = event_markers(1)  # event 1 is a long one (~20 ms) with the default seed
    cfg = profile.ProfileConfig(
        workload=Workload(name="minihlt", argv=(minihlt, "--events", "9", "--static-mb", "16")),
        window=Window(start, stop), out_dir=str(tmp_path / "out"))
    res = run_study(profile, cfg, store, PerfWindowRecorder())
    assert res.opened and not res.whole_run
    row = res.recordings[0]
    assert row["start_line"] == "start processing event #1"
    assert row["stop_line"].startswith("done processing event #1 in ")
    assert row["outside_window"] == 0
    samples = read_samples(res.perf_data[0])
    lo, hi = row["enable_sent_ns"], row["disabled_ns"]
    # perf enables while the event runs on: under load the enable can land late in the
    # ~20 ms event, so only "some samples, all inside the window" is a property of the code
    assert samples and all(lo <= s.time_ns <= hi for s in samples)
    # at most the window's length of samples at 4 kHz on one thread (+1 for rounding)
    assert len(samples) <= (hi - lo) / 1e9 * 4000 * 1.1 + 1
    log = (Path(res.perf_data[0]).parent / "output-0.log").read_text()
    assert re.search(r"^events: 9$", log, re.M)
    camp = store.campaign(res.campaign_id)
    assert camp.status == "done"
    assert camp.summary["window_opened"] and camp.summary["enable_latency_us"][0] > 0
    assert {a.kind for a in store.artifacts(res.campaign_id)} == {"perf.data", "log"}
    # the stored run carries the window and the folded profile: analysis needs no perf.data
    (m,) = store.measurements(res.campaign_id)
    assert m.params == {"recording": 0, "event": res.event} and m.result.ok
    again = profile.analyse(cfg, [m.result])
    assert [t.as_dict() for t in again.top] == [t.as_dict() for t in res.top]
    assert profile.ProfileResult.from_dict(res.as_dict()).as_dict() == res.as_dict()
