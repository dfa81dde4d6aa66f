"""Energy in run, variants, the report and compare: a modelled power through the mock executor,
a RAPL fixture tree driven end to end (the absence path of the real CLI on this machine:
tests/cli/test_energy_studies.py)."""

from __future__ import annotations

import io
import json
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from perflab.checks.variants import NoisyMachine
from perflab.kernels.variants import BuildTarget, Variant
from perflab.measure.energy import RaplMeter, choose_meter
from perflab.measure.executor import MockExecutor
from perflab.model import MetricPattern, RunResult, Workload
from perflab.platform.machine import Machine
from perflab.platform.sysfs import Root
from perflab.platform.topology import Topology
from perflab.report.build import build_report
from perflab.report.render import to_html
from perflab.report.terminal.run import render as render_run
from perflab.report.terminal.variants import render as render_variants
from perflab.stats import median_ci
from perflab.store import open_store
from perflab.studies import resume_study, run_study
from perflab.studies.compare.study import CompareConfig, run_compare
from perflab.studies.cost.energy import events_metric
from perflab.studies.run import study as run_mod
from perflab.studies.run.result import RunStudyResult
from perflab.studies.run.study import Command, RunConfig
from perflab.studies.session import Session
from perflab.studies.variants import study as vs
from perflab.studies.variants.result import VariantsResult

MACHINE = Machine(topology=Topology(cpus=(), cores=(), sockets=(), nodes=()), metadata={"hostname": "t"})
EVENTS = (MetricPattern(r"(?m)^events: (?P<events>\d+)$"),)
DATA = Path(__file__).parents[1] / "data" / "energy"


class PowerModel:
    """A modelled meter on the mock's virtual clock: joules = watts of the command x its seconds."""

    source = "model"

    def __init__(self, executor: MockExecutor, watts) -> None:
        self.executor, self.watts = executor, watts

    def start(self) -> None:
        self.t0 = self.executor.clock_ns

    def stop(self) -> dict[str, float]:
        spec = self.executor.calls[-1]
        return {"rapl:package-0": self.watts(spec) * (self.executor.clock_ns - self.t0) / 1e9}


def _timed(ex: MockExecutor, walls: dict[str, float], events: float = 100.0):
    """The mock's model: command label -> base seconds, 1 % longer each repetition of it."""
    seen: dict[str, int] = {}

    def model(spec):
        k = seen[spec.label] = seen.get(spec.label, -1) + 1
        wall = walls[spec.label] * (1 + 0.01 * k)
        return RunResult(wall_ns=round(wall * 1e9), user_s=wall, sys_s=0.0, maxrss_kb=1024, minflt=0, majflt=0,
                         nvcsw=0, nivcsw=0, exit_code=0, start_ns=ex.clock_ns, end_ns=ex.clock_ns + round(wall * 1e9),
                         metrics={"events": events})

    return model


def _run_campaign(store, watts: dict[str, float], walls=None, runs: int = 5):
    ex = MockExecutor()
    ex.model = _timed(ex, walls or {"a": 2.0, "b": 1.0})
    cfg = RunConfig(commands=(Command("a", ("a",)), Command("b", ("b",))), metrics=EVENTS, runs=runs)
    meter = PowerModel(ex, lambda spec: watts[spec.label])
    return run_study(run_mod, cfg, store, ex, machine=MACHINE, energy=meter)


def test_run_joules_per_run_and_per_event_with_their_intervals(tmp_path):
    with open_store(str(tmp_path / "s.db")) as store:
        res = _run_campaign(store, {"a": 50.0, "b": 80.0})
        stored = store.measurements(res.campaign_id)
    assert all(m.result.energy for m in stored)  # every run's reading is in the store
    a, b = res.benchmarks
    # a: 2.00, 2.02, ... 2.08 s at 50 W -> 100..104 J; 5 runs: min..max is a 93.75 % interval
    assert a.energy["joules_per_run"] == pytest.approx(102.0)
    assert a.energy["joules_per_run_ci"] == {"low": pytest.approx(100.0), "high": pytest.approx(104.0),
                                             "level": pytest.approx(0.9375)}
    assert a.energy["joules_per_event"] == pytest.approx(1.02)
    assert a.energy["joules_per_event_ci"]["low"] == pytest.approx(1.00)
    assert a.energy["watts"] == pytest.approx(50.0) and a.energy["n"] == 5
    assert b.energy["joules_per_run"] == pytest.approx(81.6) and b.energy["watts"] == pytest.approx(80.0)
    assert "RAPL" in a.energy["source"] and "undercounts" in a.energy["source"]
    back = RunStudyResult.from_dict(json.loads(json.dumps(res.as_dict())))
    assert back.benchmarks[0].energy == a.energy
    console = Console(width=160, record=True, file=io.StringIO(), color_system=None)
    render_run(res, console)
    text = console.export_text()
    assert "energy per run and per event, medians (RAPL (CPU packages and DRAM; undercounts the node)):" in text
    assert "  a: 102 J/run [100, 104] (94% CI), 1.02 J/event [1, 1.04] (94% CI), 50 W, 5 runs" in text
    assert "  b: 81.6 J/run [80, 83.2] (94% CI), 0.816 J/event [0.8, 0.832] (94% CI), 80 W, 5 runs" in text
    from perflab.report.export import hyperfine_dict

    exported = {e["command"]: e for e in hyperfine_dict(res)["results"]}
    assert exported["a"]["energy"] == a.energy  # the JSON export carries it beside hyperfine's fields


def test_run_without_a_meter_prints_nothing_about_energy(tmp_path):
    with open_store(str(tmp_path / "s.db")) as store:
        ex = MockExecutor()
        res = run_study(run_mod, RunConfig(commands=(Command("sleep 0.1", ("sleep", "0.1")),), runs=3),
                        store, ex, machine=MACHINE)
    assert res.benchmarks[0].energy is None
    console = Console(width=160, record=True, file=io.StringIO(), color_system=None)
    render_run(res, console)
    assert "energy" not in console.export_text() and "J/run" not in console.export_text()


def test_failed_runs_are_left_out_of_the_joules(tmp_path):
    with open_store(str(tmp_path / "s.db")) as store:
        ex = MockExecutor()
        cfg = RunConfig(commands=(Command("sleep 1", ("sleep", "1")), Command("false", ("false",))), runs=3,
                        ignore_failure=True)
        res = run_study(run_mod, cfg, store, ex, machine=MACHINE, energy=PowerModel(ex, lambda s: 10.0))
    ok, failed = res.benchmarks
    assert ok.energy["joules_per_run"] == pytest.approx(10.0) and "joules_per_event" not in ok.energy
    assert failed.energy is None


def test_events_metric_of_a_rate_or_a_count():
    assert events_metric(EVENTS) == "events"
    rate = (MetricPattern(r"tracks: (?P<tracks>\d+)"), MetricPattern(r"(?P<tracks_per_s>[\d.]+)/s"))
    assert events_metric(rate, "tracks_per_s") == "tracks"
    assert events_metric((MetricPattern(r"(?P<ms>\d+) ms"),), "ms") is None


def test_resume_keeps_the_stored_readings_and_measures_the_rest(tmp_path):
    class Stop(KeyboardInterrupt):
        pass

    with open_store(str(tmp_path / "s.db")) as store:
        ex = MockExecutor()
        timed = _timed(ex, {"a": 2.0, "b": 1.0})

        def model(spec):
            if len(ex.calls) == 6:
                raise Stop()
            return timed(spec)

        ex.model = model
        cfg = RunConfig(commands=(Command("a", ("a",)), Command("b", ("b",))), metrics=EVENTS, runs=5)
        with pytest.raises(Stop):
            run_study(run_mod, cfg, store, ex, machine=MACHINE,
                      energy=PowerModel(ex, lambda s: {"a": 50.0, "b": 80.0}[s.label]))
        camp = store.campaigns(study="run")[-1]
        ex2 = MockExecutor()
        ex2.model = _timed(ex2, {"a": 2.0, "b": 1.0})
        _, res = resume_study(store, camp.id, ex2, energy=PowerModel(ex2, lambda s: {"a": 50.0, "b": 80.0}[s.label]))
    assert len(ex2.calls) == 5  # only the missing runs
    assert [b.energy["n"] for b in res.benchmarks] == [5, 5]
    assert res.benchmarks[0].energy["watts"] == pytest.approx(50.0)


def _variants_config() -> vs.VariantsConfig:
    wl = Workload(name="sim", argv=("{exe}",), metrics=EVENTS + (MetricPattern(r"(?P<events_per_s>[\d.]+) ev/s"),),
                  primary_metric="events_per_s")
    variants = (Variant("base", ("-O2", "-m64")), Variant("lto", ("-O2", "-flto")))
    return vs.VariantsConfig(BuildTarget("sim"), wl, variants, rounds=10, warmup=0, seed=2)


def _variants_campaign(store, watts: dict[str, float]) -> tuple[VariantsResult, int]:
    """The variants plan run through the session and the mock, lto 5 % faster and at lower power."""
    import random

    config = _variants_config()
    specs = [s for s in vs.plan(config) if s.params["round"] >= 0]
    noisy = NoisyMachine({"lto": 1.05}, random.Random(7), len(specs))

    def model(spec):
        r = noisy(spec)
        r.metrics["events"] = 100.0
        return r

    ex = MockExecutor(model)
    cid = store.start_campaign("variants", config.as_dict())
    session = Session(ex, store, cid, energy=PowerModel(ex, lambda s: watts[s.params["variant"]]))
    for s in specs:
        session.run(replace(s, argv=("true",)), rep=s.params["round"])
    result = vs.analyse(config, store.measurements(cid))
    store.finish_campaign(cid, "done", result.as_dict())
    return result, cid


def test_variants_joules_per_variant_and_the_energy_comparison(tmp_path):
    with open_store(str(tmp_path / "s.db")) as store:
        res, cid = _variants_campaign(store, {"base": 100.0, "lto": 90.0})
        ms = store.measurements(cid)
    base, lto = res.row("base"), res.row("lto")
    joules = sorted(100.0 * m.result.wall_s for m in ms if m.params["variant"] == "base")
    ci = median_ci(joules)
    assert base.energy["joules_per_run_ci"] == pytest.approx(ci.as_dict())
    assert base.energy["joules_per_event"] == pytest.approx((joules[4] + joules[5]) / 2 / 100)
    assert base.energy["watts"] == pytest.approx(100.0) and lto.energy["watts"] == pytest.approx(90.0)
    c = lto.comparisons["energy_j"]  # paired by round, as elapsed time is: 0.9 W ratio / 1.05 speed
    assert c.significant and c.ci.low < 0.9 / 1.05 < c.ci.high and c.better is True
    assert re.search(r"energy -1[0-9]\.[0-9] % \[-1[0-9]\.[0-9] %, -1[0-9]\.[0-9] %\] \(95% CI\), less energy", lto.verdict)
    back = VariantsResult.from_dict(json.loads(json.dumps(res.as_dict())))
    assert back.row("lto").energy == lto.energy
    console = Console(file=io.StringIO(), width=140, color_system=None)
    render_variants(res, console)
    lines = console.file.getvalue().splitlines()
    assert sum(ln.startswith("  base: ") and "J/run" in ln and "J/event" in ln for ln in lines) == 1
    assert sum(ln.startswith("  lto: ") and "90 W, 10 runs" in ln for ln in lines) == 1


def test_report_sections_have_the_energy_columns(tmp_path):
    with open_store(str(tmp_path / "s.db")) as store:
        run = _run_campaign(store, {"a": 50.0, "b": 80.0})
        _, vid = _variants_campaign(store, {"base": 100.0, "lto": 90.0})
        plain = run_study(run_mod, RunConfig(commands=(Command("sleep 0.1", ("sleep", "0.1")),), runs=3),
                          store, MockExecutor(), machine=MACHINE)
        report = build_report(store, [store.campaign(i) for i in (run.campaign_id, vid, plain.campaign_id)])
    run_sec, var_sec, plain_sec = report.sections
    t = run_sec.tables[0]
    assert t.columns[-4:] == ["J/run", "J/run CI", "J/event", "J/event CI"]
    assert t.rows[0][-4:] == [pytest.approx(102.0), "[100, 104] (94% CI)", pytest.approx(1.02), "[1.00, 1.04] (94% CI)"]
    assert "RAPL" in t.note
    assert "J/event CI" in var_sec.tables[0].columns
    assert "J/run" not in plain_sec.tables[0].columns  # nothing measured, no column
    # the evidence is the reference's (a), as the verdict is, and how b compares with it
    assert "a: median 2.04 s" in report.answers[0].evidence and "b: ×0.500" in report.answers[0].evidence
    assert "102 J/run [100, 104] J (94% CI), 1.02 J/event" in report.answers[0].evidence
    html = to_html(report)
    assert "J/event CI" in html and "undercounts the node" in html
    # the machine section says energy either way: a run without a source says nothing of it
    facts = dict(map(tuple, report.machine.tables[0].rows))
    assert facts["energy"] == "measured by rapl"
    with open_store(str(tmp_path / "s.db")) as store:
        alone = build_report(store, [store.campaign(plain.campaign_id)])
    assert dict(map(tuple, alone.machine.tables[0].rows))["energy"].startswith("not measured in these campaigns")


def test_compare_gives_the_energy_ratio_of_two_campaigns(tmp_path):
    with open_store(str(tmp_path / "s.db")) as store:
        a = _run_campaign(store, {"a": 50.0, "b": 80.0}, runs=8)
        b = _run_campaign(store, {"a": 60.0, "b": 80.0}, runs=8)
        res = run_compare(CompareConfig(a.campaign_id, b.campaign_id), store)
    rows = {(r.key, r.measure): r for r in res.rows}
    e = rows[("a", "energy_j")]
    assert e.ratio == pytest.approx(1.2) and e.lo <= 1.2 <= e.hi and e.significant and e.better == "A"
    per_event = rows[("a", "energy_per_event_j")]
    assert per_event.ratio == pytest.approx(1.2) and per_event.median_a == pytest.approx(a.benchmarks[0].energy["joules_per_event"])
    assert not rows[("b", "energy_j")].significant and rows[("b", "energy_j")].ratio == pytest.approx(1.0)
    assert ("a", "wall_s") not in rows or not rows[("a", "wall_s")].significant


def test_rapl_fixture_end_to_end_through_a_run(tmp_path):
    """The Intel two-socket tree's counters advance as the mock's runs go: 5 J on package 0, 1 J on
    its DRAM, 2 J on package 1 (whose counter wraps during the study), 0.5 J on its DRAM."""
    shutil.copytree(DATA / "intel-2s", tmp_path / "intel-2s")
    root = Root(str(tmp_path / "intel-2s"))
    zones = {"intel-rapl:0": 5_000_000, "intel-rapl:0:0": 1_000_000, "intel-rapl:1": 2_000_000,
             "intel-rapl:1:0": 500_000}
    maxima = {z: int(Path(root.join(f"sys/class/powercap/{z}/max_energy_range_uj")).read_text()) for z in zones}
    ex = MockExecutor()
    wrapped = []

    def model(spec):
        for zone, uj in zones.items():
            f = Path(root.join(f"sys/class/powercap/{zone}/energy_uj"))
            now = int(f.read_text()) + uj
            wrapped.append(now > maxima[zone])
            f.write_text(f"{now % (maxima[zone] + 1)}\n")
        return 1.0

    ex.model = model
    meter, note = choose_meter("rapl", root)
    assert isinstance(meter, RaplMeter) and "CPU packages and DRAM only" in note
    cfg = RunConfig(commands=(Command("work", ("work",)),), runs=4)
    with open_store(str(tmp_path / "s.db")) as store:
        res = run_study(run_mod, cfg, store, ex, machine=MACHINE, energy=meter)
    assert any(wrapped)  # the package-1 counter crossed its maximum during the study
    e = res.benchmarks[0].energy
    assert e["joules_per_run"] == pytest.approx(5 + 1 + 2 + 0.5)  # core sub-domains not added again
    assert e["joules_per_run_ci"]["low"] == pytest.approx(8.5) and e["watts"] == pytest.approx(8.5)


def test_the_perf_probe_is_asked_once_per_boot(tmp_path, monkeypatch):
    from perflab.platform.hostcache import boot_cached

    monkeypatch.setenv("PERFLAB_CACHE", str(tmp_path / "cache"))
    calls = []

    def probe() -> bool:
        calls.append(1)
        return False

    assert boot_cached("perf-energy power/energy-pkg/", probe) is False
    assert boot_cached("perf-energy power/energy-pkg/", probe) is False
    assert boot_cached("perf-energy power/energy-ram/", probe) is False  # another question
    assert len(calls) == 2
    assert boot_cached("x", lambda: 7, Root(str(tmp_path))) == 7  # a fixture tree: never cached
    assert len(list((tmp_path / "cache" / "host").iterdir())) == 2


def _snapshot(name: str, text: str) -> None:
    import os

    snap = Path(__file__).parents[1] / "snapshots" / name
    if os.environ.get("PERFLAB_UPDATE_SNAPSHOTS"):
        snap.write_text(text)
    assert text == snap.read_text()


def test_terminal_snapshots_with_energy(tmp_path):
    with open_store(str(tmp_path / "s.db")) as store:
        run = _run_campaign(store, {"a": 50.0, "b": 80.0})
        variants, _ = _variants_campaign(store, {"base": 100.0, "lto": 90.0})
    console = Console(width=160, record=True, file=io.StringIO(), color_system=None)
    render_run(run, console)
    _snapshot("run_energy.txt", console.export_text())
    console = Console(file=io.StringIO(), width=200, color_system=None)
    render_variants(variants, console)
    _snapshot("variants_energy.txt", console.file.getvalue())


def test_instances_section_shows_watts_and_joules_per_event_where_measured():
    from types import SimpleNamespace

    from perflab.report.html.instances import instances_section
    from perflab.studies.instances.result import InstancesResult

    point = {"n": 2, "throughput": 5.0, "ci": {"low": 4.0, "high": 6.0, "level": 0.9375}, "per_copy": 2.5, "reps": 5,
             "gain_per_copy": None, "start_spread_us": 1.0, "watts": 120.0, "joules_per_unit": 24.0}
    summary = {"unit": "events/s", "energy_source": "node meter (IPMI DCMI)", "energy_optimum_n": 2,
               "optimum_throughput": 5.0, "optimum_n": 2, "optimum_policy": "none",
               "ns": [2], "scans": [{"policy": "none", "optimum_n": 2, "optimum_throughput": 5.0, "within_1pct_n": 2,
                                     "points": [point]}]}
    camp = SimpleNamespace(study="instances", id=1, status="done")
    t = instances_section(camp, InstancesResult.from_dict(summary), []).tables[0]
    assert t.columns[-2:] == ["watts", "J per event"] and t.rows[0][-2:] == [120.0, 24.0]
    assert "node meter" in t.note and "N = 2" in t.note
    t = instances_section(camp, InstancesResult.from_dict({**summary, "energy_source": None}), []).tables[0]
    assert "watts" not in t.columns and len(t.rows[0]) == len(t.columns) and not t.note
