"""minihlt, the built-in reference workload: builds per ABI, checksum stability, modes, memory."""

from __future__ import annotations

import errno
import os
import re
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from perflab.kernels import minihlt

SMALL = ("--events", "12", "--static-mb", "8")

# name -> cflags; built once per test session (the build cache makes reruns free)
BUILDS = {
    "O0": ("-O0",),
    "O2": ("-O2",),
    "O3": ("-O3",),
    "m32": ("-O2", *minihlt.ABI_FLAGS["m32"]),
    "m32-x87": ("-O2", "-m32"),
    "fastmath": ("-O2", "-ffast-math"),
    "mx32": ("-O2", *minihlt.ABI_FLAGS["mx32"]),
}


@pytest.fixture(scope="module")
def builds():
    # two compilers at a time: the machine has 2 CPUs and the cache makes later runs free
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(minihlt.build_minihlt, flags) for name, flags in BUILDS.items()}
        return {name: f.result().path for name, f in futures.items()}


def run(exe, *args, timeout=120):
    proc = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=timeout, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def summary(out: str) -> dict[str, str]:
    return dict(re.findall(r"(?m)^(events|seconds|events/s|accepted|steps|checksum|workers): (.+)$", out))


def test_sources_are_several_translation_units():
    names = {p.name for p in minihlt.sources()}
    assert {"geometry.cpp", "field.cpp", "physics.cpp", "transport.cpp", "trigger.cpp", "main.cpp", "minihlt.h"} <= names


def test_log_lines_and_summary(builds):
    out = run(builds["O2"], *SMALL)
    lines = out.splitlines()
    assert lines[0].startswith(minihlt.STATIC_LOADED_MARKER)
    starts = [int(m) for m in re.findall(r"(?m)^start processing event #(\d+)$", out)]
    dones = re.findall(r"(?m)^done processing event #(\d+) in ([\d.]+) ms$", out)
    assert starts == list(range(12))
    assert [int(n) for n, _ in dones] == list(range(12))
    s = summary(out)
    assert s["events"] == "12"
    assert 0 <= int(s["accepted"]) <= 12
    hexpart, dec = re.fullmatch(r"0x([0-9a-f]+) \((\d+)\)", s["checksum"]).groups()
    assert int(hexpart, 16) == int(dec) < 2**53
    assert float(s["events/s"]) == pytest.approx(12 / float(s["seconds"]), rel=0.01)


def test_checksum_identical_across_opt_levels_and_abis(builds):
    results = {name: summary(run(builds[name], *SMALL)) for name in ("O0", "O2", "O3", "m32", "m32-x87")}
    ref = results["O2"]
    for name, s in results.items():
        assert (s["events"], s["accepted"], s["checksum"], s["steps"]) == (
            ref["events"], ref["accepted"], ref["checksum"], ref["steps"]), name


def test_fast_math_keeps_the_event_count(builds):
    assert summary(run(builds["fastmath"], *SMALL))["events"] == "12"


def test_seed_changes_checksum(builds):
    a = summary(run(builds["O2"], *SMALL, "--seed", "1"))["checksum"]
    b = summary(run(builds["O2"], *SMALL, "--seed", "2"))["checksum"]
    assert a != b


def test_mx32_builds_and_exec_is_refused_or_runs(builds):
    exe = builds["mx32"]
    head = exe.read_bytes()[:20]
    assert head[:4] == b"\x7fELF" and head[4] == 1  # ELFCLASS32
    assert int.from_bytes(head[18:20], "little") == 62  # EM_X86_64: x32, not i386
    try:
        out = subprocess.run([str(exe), *SMALL], capture_output=True, text=True, timeout=120).stdout
    except OSError as exc:
        assert exc.errno == errno.ENOEXEC, exc
        print("x32: built; this kernel refuses to run it (ENOEXEC)")
        return
    # a kernel with CONFIG_X86_X32: it must then agree with the other ABIs
    assert summary(out)["checksum"] == summary(run(builds["O2"], *SMALL))["checksum"]


def test_fork_gives_same_events_and_checksum_as_serial(builds):
    serial = summary(run(builds["O2"], *SMALL))
    out = run(builds["O2"], *SMALL, "--fork", "2")
    forked = summary(out)
    assert forked["workers"] == "2"
    assert (forked["events"], forked["accepted"], forked["checksum"]) == (
        serial["events"], serial["accepted"], serial["checksum"])
    done = sorted(int(n) for n in re.findall(r"(?m)^done processing event #(\d+) in", out))
    assert done == list(range(12))  # every event once, split between the workers
    assert out.count(minihlt.STATIC_LOADED_MARKER) == 1  # static data loaded once, before the fork


def test_event_mode_processes_only_event_k(builds):
    out = run(builds["O2"], "--event", "5", "--static-mb", "8")
    assert out.index(minihlt.STATIC_LOADED_MARKER) < out.index("start processing event #5")
    assert re.findall(r"(?m)^start processing event #(\d+)$", out) == ["5"]
    assert summary(out)["events"] == "1"


def test_seconds_mode_stops_on_time(builds):
    out = run(builds["O2"], "--seconds", "0.3", "--static-mb", "8")
    s = summary(out)
    assert int(s["events"]) >= 1
    assert float(s["seconds"]) < 3.0  # stops after the event running at the deadline


def test_logs_are_flushed_line_by_line(builds):
    """The first event's lines arrive through a pipe while the program is still running."""
    proc = subprocess.Popen([str(builds["O2"]), "--events", "100000", "--static-mb", "8"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().startswith(minihlt.STATIC_LOADED_MARKER)
        assert proc.stdout.readline().strip() == "start processing event #0"
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


def test_heavy_tail_in_event_cost(builds):
    out = run(builds["O2"], "--events", "100", "--static-mb", "8", "--event-stats")
    steps = [int(s) for s in re.findall(r"(?m)^event #\d+: steps (\d+)", out)]
    times = [float(t) for t in re.findall(r"(?m)^done processing event #\d+ in ([\d.]+) ms$", out)]
    assert len(steps) == len(times) == 100
    med = statistics.median(steps)
    print(f"steps per event: median {med:.0f}, max {max(steps)} ({max(steps) / med:.1f}x); "
          f"time: median {statistics.median(times):.2f} ms, max {max(times):.2f} ms")
    assert max(steps) > 3 * med  # deterministic: steps do not depend on machine noise
    assert max(times) > 3 * statistics.median(times)


def _max_rss_kb(argv) -> int:
    # perflab's executor, not Popen: a child forked from this (large) pytest process counts the
    # parent's pages in ru_maxrss until it execs, which would hide the ABI difference.
    from perflab.measure.executor import RealExecutor
    from perflab.model import RunSpec

    res = RealExecutor().run(RunSpec(argv=tuple(argv)))
    assert res.ok, res.stderr_tail
    return res.maxrss_kb


def test_m32_needs_less_memory_than_m64(builds):
    args = ("--events", "1", "--static-mb", "64")
    m64 = _max_rss_kb([str(builds["O2"]), *args])
    m32 = _max_rss_kb([str(builds["m32"]), *args])
    print(f"max RSS with 64 MB of static data: -m64 {m64 / 1024:.1f} MiB, -m32 {m32 / 1024:.1f} MiB, "
          f"ratio m32/m64 {m32 / m64:.2f}")
    assert m64 > 50 * 1024
    assert m32 < 0.8 * m64


def test_workload_metrics_parse_the_summary(builds):
    from perflab.measure.metrics import extract

    wl = minihlt.quick_workload()
    assert wl.primary_metric == "events_per_s" and wl.higher_is_better
    assert wl.fork_arg == ("--fork", "{n}", "--first", "{first}", "--events", "{events}")
    assert wl.event_arg == ("--event", "{k}")
    assert wl.checksum_metric == "checksum"
    out = run(wl.argv[0], "--events", "3", "--static-mb", "8")
    m = extract(wl.metrics, out, "")
    assert m["events"] == 3
    assert m["events_per_s"] > 0
    assert int(m["checksum"]) == int(re.search(r"checksum: 0x([0-9a-f]+)", out).group(1), 16)
    assert set(m) >= {"events", "seconds", "events_per_s", "accepted", "steps", "checksum"}


def test_pgo_build_keeps_the_checksum(builds):
    res = minihlt.build_minihlt_pgo(("-O2",), training_args=("--events", "4", "--static-mb", "4"))
    assert "-fprofile-use" in res.command
    assert summary(run(res.path, *SMALL))["checksum"] == summary(run(builds["O2"], *SMALL))["checksum"]
    again = minihlt.build_minihlt_pgo(("-O2",), training_args=("--events", "4", "--static-mb", "4"))
    assert again.cached and again.path == res.path


def test_pgo_builds_at_once_share_one_training(tmp_path):
    """Two processes building the same PGO variant from an empty cache (two labs, two test
    workers): without a lock each removed the other's profile directory mid-training."""
    code = ("from perflab.kernels import minihlt; "
            "r = minihlt.build_minihlt_pgo(('-O2',), training_args=('--events', '3', '--static-mb', '4')); "
            "print(r.path, r.extra['profile_dir'])")
    env = {**os.environ, "PERFLAB_CACHE": str(tmp_path / "cache")}
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    (path_a, prof_a), (path_b, prof_b) = (out.split() for out, _ in outs)
    assert prof_a == prof_b and len(list(Path(prof_a).glob("*.gcda"))) == len(minihlt.cpp_sources())
    assert summary(run(path_a, *SMALL))["checksum"] == summary(run(path_b, *SMALL))["checksum"]
