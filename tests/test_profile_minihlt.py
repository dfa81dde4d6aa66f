"""End-to-end: profile only event K of minihlt (the built-in reference workload)."""

import re
import shutil
from pathlib import Path

import pytest

from perflab.model import Workload
from perflab.studies.profile import ProfileConfig, run_profile
from perflab.studies.profile_parse import read_samples
from perflab.studies.profile_window import Window, event_markers

pytestmark = pytest.mark.skipif(shutil.which("perf") is None, reason="perf not installed")


@pytest.fixture(scope="module")
def minihlt():
    try:
        from perflab.kernels.minihlt import build_minihlt

        return str(build_minihlt().path)
    except ImportError:
        # minihlt's Python wrapper not there yet: build its sources through the build cache.
        from perflab.kernels.build import build

        src = sorted((Path(__import__("perflab.kernels").kernels.__path__[0]) / "minihlt").glob("*.cpp"))
        if not src:
            pytest.skip("minihlt sources not present")
        return str(build(src, "minihlt", cflags=("-O2", "-g")).path)


def test_profile_only_event_k_of_minihlt(minihlt, tmp_path):
    from perflab.store import open_store

    store = open_store(str(tmp_path / "p.db"))
    start, stop = event_markers(1)  # event 1 is a long one (~20 ms) with the default seed
    cfg = ProfileConfig(workload=Workload(name="minihlt", argv=(minihlt, "--events", "9", "--static-mb", "16")),
                        window=Window(start, stop), out_dir=str(tmp_path / "out"))
    res = run_profile(cfg, None, store)
    assert res.opened
    row = res.recordings[0]
    assert row["start_line"] == "start processing event #1"
    assert row["stop_line"].startswith("done processing event #1 in ")
    assert row["outside_window"] == 0
    samples = read_samples(res.perf_data[0])
    lo, hi = row["enable_sent_ns"], row["disabled_ns"]
    assert len(samples) >= 5 and all(lo <= s.time_ns <= hi for s in samples)
    # at most the window's length of samples at 4 kHz on one thread (+1 for rounding)
    assert len(samples) <= (hi - lo) / 1e9 * 4000 * 1.1 + 1
    log = (Path(res.perf_data[0]).parent / "output.log").read_text()
    assert re.search(r"^events: 9$", log, re.M)
    summary = store.campaign(res.campaign_id).summary
    assert summary["window_opened"] and summary["enable_latency_us"][0] > 0
    assert {a.kind for a in store.artifacts(res.campaign_id)} == {"perf.data", "log"}
