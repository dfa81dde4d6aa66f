"""Per-event series: extraction with arrival stamps, the compact stored form and its cost, the
warm-up change point, the steady rate and the quantile intervals (through the real spawn server:
tests/real/test_series.py; `perflab run` end to end on a script whose first 20 events are 10x
slower, and bad input: tests/cli/test_series.py)."""

from __future__ import annotations

import math
import random
import textwrap

import pytest

from perflab.errors import PerflabError
from perflab.measure.series import compile_series, extract_series, run_metrics, steady_part
from perflab.model import RunResult
from perflab.model.series import EventSeries, decode, encode, series_length
from perflab.stats.steady import quantile_ci, steady_rate, warmup
from perflab.store import open_store
from perflab.studies.run.series import summarise

SLOW_START = textwrap.dedent("""\
    import sys, time
    n = int(sys.argv[1])
    for i in range(n):
        time.sleep(0.05 if i < 20 else 0.005)
        print(f"event {i}", flush=True)
""")


@pytest.fixture
def slow_start(tmp_path):
    path = tmp_path / "slowstart.py"
    path.write_text(SLOW_START)
    return path


def test_extract_ids_times_and_stamps():
    text = "start\ndone event 1 in 2.5 ms\nnoise\ndone event 2 in 3 ms\nsummary: 2 events\n"
    pats = compile_series([r"^done event (?P<event>\d+) in (?P<ms>[\d.]+) ms$"])
    # reads ended after byte 10 (nothing of an event), after byte 30 (the first) and at the end
    stamps = [(10, 1_000), (30, 5_000), (len(text), 9_000)]
    s = extract_series(pats, text, start_ns=500, stamps=stamps)
    assert s.ids == [1, 2] and s.ms == [2.5, 3.0] and s.at_ns == [4_500, 8_500]


def test_series_regex_without_a_known_group_is_one_line():
    with pytest.raises(PerflabError, match="names no event, count or time group"):
        compile_series([r"done (?P<n>\d+)"])
    with pytest.raises(PerflabError, match="does not compile"):
        compile_series([r"done (?P<event>\d+"])


def test_encode_round_trip_and_its_cost():
    rng = random.Random(1)
    n = 1_000_000
    ms = [round(rng.lognormvariate(1.5, 0.5), 3) for _ in range(n)]
    at, t = [], 0
    for x in ms:
        t += int(x * 1e6)
        at.append(t - t % 1000)  # stamps to the microsecond
    s = EventSeries(list(range(n)), ms, at)
    blob = encode(s)
    back = decode(blob)
    assert series_length(blob) == n
    assert back.ids == s.ids and back.at_ns == s.at_ns
    assert all(abs(a - b) < 1e-9 for a, b in zip(back.ms, ms))
    # The stated cost (docs/run.md): about 5 bytes an event for a million events with a time and
    # a stamp (to the microsecond) each, 2.5 with times only; ids counting up by one cost nothing.
    assert len(blob) / n < 5.5, len(blob) / n
    assert len(encode(EventSeries(s.ids, ms, [0] * n))) / n < 3


def test_warmup_found_where_planted_and_none_without():
    rng = random.Random(3)
    found = []
    for trial in range(20):
        times = [rng.expovariate(1 / 10.0) * (10 if i < 20 else 1) + 1 for i in range(300)]
        found.append(warmup(times, seed=trial).events)
    assert sum(abs(k - 20) <= 2 for k in found) >= 18, found
    quiet = [warmup([rng.paretovariate(2.5) for _ in range(300)], seed=t).events for t in range(40)]
    assert sum(k > 0 for k in quiet) <= 2, quiet  # alpha 1 %: a few in 40 at most


def test_steady_rate_interval_is_the_ratio_estimators():
    rate, ci = steady_rate([(100, 1.0), (100, 1.1), (100, 0.9)])
    assert rate == pytest.approx(100.0)
    assert ci is not None and ci.low < 100 < ci.high and ci.level == 0.95
    assert steady_rate([(100, 1.0)])[1] is None


def test_quantile_interval_reports_the_level_it_reaches():
    xs = list(range(1, 101))
    value, ci = quantile_ci(xs, 0.5)
    assert value == 50 and ci.low < 50 < ci.high and ci.level >= 0.95
    value, ci = quantile_ci(xs, 0.99)
    assert value == 99 and ci.high == 100 and ci.level < 0.95  # 100 events cannot give 95 % for p99


def test_skip_events_fixes_the_warmup():
    s = EventSeries(list(range(50)), [5.0] * 10 + [1.0] * 40, [0] * 50)
    part = steady_part(s, skip_events=10)
    assert part.warmup.events == 10 and part.warmup.how == "skip"
    assert run_metrics(s, 1.0, 10)["steady_rate"] == pytest.approx(1000.0)


def test_series_stored_apart_and_replayed(tmp_path):
    s = EventSeries([1, 2, 3], [1.0, 2.0, 3.0], [0, 0, 0])
    r = RunResult(wall_ns=10, user_s=0, sys_s=0, maxrss_kb=1, minflt=0, majflt=0, nvcsw=0, nivcsw=0,
                  exit_code=0, series=encode(s))
    from perflab.store.lite import open_fast

    db = str(tmp_path / "p.db")
    with open_fast(db) as lite:
        cid = lite.start_campaign("run", {})
        mid = lite.add_measurement(cid, r, {}, 0, "x")
        lite.add_measurements(cid, [(r, {"n": 2}, 0, "y")])
    with open_store(db) as store:
        mid2 = store.add_measurement(cid, r, {}, 1, "x")
        blobs = store.series(cid)
        assert set(blobs) == {mid, mid2, mid + 1}
        assert decode(blobs[mid]).ms == [1.0, 2.0, 3.0]
        assert store.measurements(cid)[0].result.series == b""  # listings never read the blobs


def test_summary_names_a_heavy_event_across_runs():
    runs = []
    for seed in range(5):
        rng = random.Random(seed)
        ms = [1 + rng.random() for _ in range(100)]
        ms[73] = 30.0  # event 73 is heavy in every run
        runs.append(encode(EventSeries(list(range(100)), ms, [0] * 100)))
    s = summarise(runs, [0.2] * 5)
    assert s.slowest[0]["event"] == 73 and s.slowest[0]["slowest_in"] == 5
    assert s.steady_ci is not None and s.clusters == "runs" and not math.isnan(s.steady_rate)
    assert s.over.startswith("100 events, each its median")


def test_primary_metric_steady_rate_takes_its_direction_and_needs_a_series():
    from perflab.cli.options import MetricChoice
    from perflab.kernels.minihlt import quick_workload
    from perflab.model.workload import Workload

    wl = MetricChoice(name="event_ms_p99").apply(quick_workload(build=False))
    assert wl.primary_metric == "event_ms_p99" and wl.higher_is_better is False and wl.unit == "ms"
    wl = MetricChoice(name="steady_rate").apply(quick_workload(build=False))
    assert wl.primary_metric == "steady_rate" and wl.higher_is_better is True
    with pytest.raises(PerflabError, match="does not declare"):
        MetricChoice(name="steady_rate").apply(Workload("plain", ("true",)))
    wl = MetricChoice(series=(r"^ev (?P<event>\d+)$",), skip_events=5).apply(Workload("plain", ("true",)))
    assert len(wl.series) == 1 and wl.spec().skip_events == 5 and wl.spec().series == wl.series


def test_report_section_has_the_series_table_and_plots():
    from types import SimpleNamespace

    from perflab.report.build import build_section
    from perflab.studies.run.series import series_of

    results = []
    for seed in range(3):
        rng = random.Random(seed)
        ms = [5.0 * (10 if i < 20 else 1) * (1 + 0.1 * rng.random()) for i in range(200)]
        results.append(RunResult(wall_ns=2 * 10 ** 9, user_s=1, sys_s=0, maxrss_kb=1, minflt=0, majflt=0,
                                 nvcsw=0, nivcsw=0, exit_code=0,
                                 series=encode(EventSeries(list(range(200)), ms, [0] * 200))))
    summary = series_of(results)
    bench = {"command": "job", "params": {}, "summary": {"n": 3, "median": 2.0, "mean": 2.0, "stddev": 0.0},
             "median_ci": {"low": 2.0, "high": 2.0, "level": 0.75}, "metrics": {}, "series": summary}
    camp = SimpleNamespace(id=1, study="run", name="", status="done", config={}, started=None, finished=None,
                           summary={"benchmarks": [bench], "verdict": "v", "ranking": {}})
    sec = build_section(camp, [])
    (table,) = [t for t in sec.tables if t.title.startswith("Per-event series")]
    assert table.rows[0][2] == "20, 20, 20" and table.rows[0][-1] == "yes"
    titles = [p.title for p in sec.plots]
    assert "job: event rate over time, per run" in titles and "job: per-event time, empirical CDF" in titles
    assert all(p.svg.lstrip().startswith("<svg") or "<svg" in p.svg[:500] for p in sec.plots)


def test_two_patterns_with_inline_flags_and_non_ascii_output():
    text = "é start\n(?m) ok\nev 1 took 2 ms\nµ\nfinished 2\n"
    pats = compile_series([r"(?m)^ev (?P<event>\d+) took (?P<ms>\d+) ms$", r"(?m)^finished (?P<count>\d+)$"])
    raw = text.encode()
    line1_end = raw.index(b"ms") + 2
    stamps = [(line1_end, 100), (len(raw), 200)]
    s = extract_series(pats, text, stamps=stamps)
    assert s.ids == [1, 2] and s.ms[0] == 2.0 and math.isnan(s.ms[1]) and s.at_ns == [100, 200]


def test_series_round_trip_on_each_backend(store_url):
    blob = encode(EventSeries([5, 6], [1.5, math.nan], [10_000, 20_000]))
    r = RunResult(wall_ns=10, user_s=0, sys_s=0, maxrss_kb=1, minflt=0, majflt=0, nvcsw=0, nivcsw=0,
                  exit_code=0, series=blob)
    with open_store(store_url) as store:
        cid = store.start_campaign("run", {})
        mid = store.add_measurement(cid, r, {}, 0, "x")
        store.add_measurements(cid, [(r, {"copy": 0}, 0, "y"), (r, {"copy": 1}, 0, "y")])
        blobs = store.series(cid)
        assert len(blobs) == 3 and blobs[mid] == blob
        back = decode(blobs[mid])
        assert back.ids == [5, 6] and back.ms[0] == 1.5 and math.isnan(back.ms[1]) and back.at_ns == [10_000, 20_000]


def test_terminal_lines_say_what_one_run_cannot_tell():
    from perflab.report.terminal.series import lines

    rng = random.Random(2)
    blob = encode(EventSeries(list(range(100)), [1 + rng.random() for _ in range(100)], [0] * 100))
    text = "\n".join(lines("job", summarise([blob], [0.2])))
    assert "batches as clusters; it sees the events' variation, not the machine's" in text
    assert "one run cannot tell a heavy event from a slow moment" in text
    blobs = [encode(EventSeries(list(range(100)), [1.0] * i + [9.0] + [1.0] * (99 - i), [0] * 100)) for i in (5, 50, 90)]
    text = "\n".join(lines("job", summarise(blobs, [0.2] * 3)))
    assert "the slowest event differs run to run" in text and "slow moments rather than heavy events" in text


def test_a_slow_start_in_one_run_of_five_is_not_cut():
    from perflab.report.terminal.series import lines

    rng = random.Random(4)
    blobs = [encode(EventSeries(list(range(200)), [(3.0 if (r == 2 and i < 40) else 1.0) * (1 + 0.2 * rng.random())
                                                    for i in range(200)], [0] * 200)) for r in range(5)]
    s = summarise(blobs, [0.3] * 5)
    assert s.warmup == [0] * 5 and len(s.lone_warmup) == 1 and 38 <= s.lone_warmup[0] <= 42
    assert "a change point in 1 of 5 runs only (after event" in "\n".join(lines("job", s))


def test_hygiene_says_why_a_series_metric_was_never_measured():
    from perflab.measure import metrics

    metrics.reset_ledger()
    assert "per-event series" in metrics.hygiene("steady_rate")[1]
    metrics.note_series(False, "its lines give no event times and these runs have no arrival stamps")
    assert "no arrival stamps" in metrics.hygiene("steady_rate")[1]
    metrics.note_series(True)
    assert metrics.hygiene("steady_rate")[1] is None
    metrics.reset_ledger()


def test_the_event_rate_lands_on_the_runs_clock_beside_the_machine_monitor():
    # Two runs of 40 events of 10 ms each, printed with arrival stamps, started 5 s apart: the
    # rate the monitor's plot draws is 100 events/s, inside each run's span on the runs' clock.
    from perflab.model.series import EventSeries, encode
    from perflab.studies.run.series import rate_timeline

    one = EventSeries(list(range(40)), [10.0] * 40, [(k + 1) * 10_000_000 for k in range(40)])
    points = rate_timeline([(1_000_000_000, encode(one)), (6_000_000_000, encode(one)), (0, encode(one))])
    assert points and all(abs(r - 100.0) < 1e-6 for _, r in points)
    firsts = [t for t, _ in points if t < 5e9]
    assert firsts and min(firsts) > 1e9 and max(firsts) <= 1.4e9
    assert all(6e9 < t <= 6.4e9 for t, _ in points if t >= 5e9)  # a run without a start time is left out
