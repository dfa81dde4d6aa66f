"""The machine monitor: its readers on fixture trees, nvidia-smi's recorded output, the sampler
thread, the store, energy gross and net of idle power (the CLI around them: tests/cli/test_monitor.py)."""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path

import pytest

from perflab.errors import PerflabError
from perflab.measure.monitor import Monitor
from perflab.platform.monitor import GPU_FIELDS, MachineReader, parse_nvidia_smi
from perflab.platform.sysfs import Root
from perflab.studies.monitor import MIN_IDLE_SAMPLES, MonitorResult, analyse, channel_watts

DATA = Path(__file__).parents[1] / "data"
NVIDIA = DATA / "nvidia-smi"


# --- nvidia-smi, as recorded on an H200 node by bench/record_gpu.sh --------------------------------

def test_recorded_h200_query_parses_to_watts_and_shares():
    gpus = [parse_nvidia_smi(line) for line in (NVIDIA / "query-5s.csv").read_text().splitlines()]
    assert [len(g) for g in gpus] == [1] * 5
    first = gpus[0][0]
    assert first == {"index": 0, "name": "NVIDIA H200", "power_w": 80.79, "power_limit_w": 700.0,
                     "util_pct": 0.0, "mem_util_pct": 0.0, "mem_used_mib": 0.0, "mem_total_mib": 143771.0,
                     "temp_c": 38.0, "sm_mhz": 345.0}
    assert sorted(g[0]["power_w"] for g in gpus) == [80.69, 80.71, 80.75, 80.79, 80.81]


def test_recorded_header_names_the_fields_the_query_asks_in_order():
    # The header line nvidia-smi wrote for the same query: the columns parse_nvidia_smi reads.
    header = (NVIDIA / "query-header.csv").read_text().splitlines()[0]
    names = [h.split(" [")[0].strip() for h in header.split(",")]
    assert names[:4] == ["index", "name", "power.draw", "power.limit"] and len(names) == len(GPU_FIELDS)
    assert "command: nvidia-smi --query-gpu=" + ",".join(GPU_FIELDS) in (NVIDIA / "README.txt").read_text()


def test_a_field_the_gpu_does_not_report_is_none_and_a_short_line_is_named():
    gpus = parse_nvidia_smi("0, Tesla T4, [N/A], 70.00, 3, 1, 300, 15360, 41, 585\n"
                            "1, Tesla T4, 27.51, 70.00, [Not Supported], 0, 0, 15360, 39, 300\n")
    assert gpus[0]["power_w"] is None and gpus[0]["util_pct"] == 3.0
    assert gpus[1]["power_w"] == 27.51 and gpus[1]["util_pct"] is None
    with pytest.raises(PerflabError, match="gave 3 fields where 10 were asked"):
        parse_nvidia_smi("0, NVIDIA H200, 80.7\n")


# --- the kernel's counters on a fixture tree --------------------------------------------------------

def _tree(tmp_path: Path, stat: str, psi_us: int, rapl_uj: tuple[int, int, int, int], khz: int) -> Root:
    root = tmp_path / "root"
    if not (root / "sys").exists():
        shutil.copytree(DATA / "energy" / "intel-2s" / "sys", root / "sys")
    (root / "proc" / "pressure").mkdir(parents=True, exist_ok=True)
    (root / "proc" / "stat").write_text(f"cpu  {stat}\ncpu0 0 0 0 0 0 0 0 0 0 0\n")
    (root / "proc" / "loadavg").write_text("1.50 1.20 1.00 3/250 4242\n")
    (root / "proc" / "meminfo").write_text("MemTotal:       8388608 kB\nMemFree: 1 kB\nMemAvailable:   6291456 kB\n"
                                           "SwapTotal:      2097152 kB\nSwapFree:       1048576 kB\n")
    (root / "proc" / "pressure" / "cpu").write_text(f"some avg10=0.00 avg60=0.00 avg300=0.00 total={psi_us}\n"
                                                    "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
    cpu = root / "sys" / "devices" / "system" / "cpu"
    for c in (0, 1):
        (cpu / f"cpu{c}" / "cpufreq").mkdir(parents=True, exist_ok=True)
        (cpu / f"cpu{c}" / "cpufreq" / "scaling_cur_freq").write_text(f"{khz + c * 100000}\n")
    (cpu / "online").write_text("0-1\n")
    zones = ["intel-rapl:0", "intel-rapl:0:0", "intel-rapl:1", "intel-rapl:1:0"]
    for zone, uj in zip(zones, rapl_uj):
        (root / "sys" / "class" / "powercap" / zone / "energy_uj").write_text(f"{uj}\n")
    return Root(str(root))


def test_two_snapshots_give_shares_levels_frequencies_and_rapl_watts(tmp_path):
    root = _tree(tmp_path, "100 0 100 700 100 0 0 0 0 0", 1_000_000, (1_000_000, 500_000, 2_000_000, 100_000), 2_000_000)
    reader = MachineReader(root)
    have, lacks = reader.sources()
    assert "frequency of 2 CPUs" in have and any(h.startswith("RAPL power (package-0") for h in have)
    assert "pressure (cpu)" in have and not any(x.startswith("RAPL") for x in lacks)
    before = reader.snapshot()
    # 2 s later: 1000 jiffies more, 500 of them idle or iowait, 50 stolen; PSI 0.5 s of waiting;
    # package-0 used 100 J (50 W), package-1 wrapped around its 65712999613 uJ range (30 W).
    max1 = int((root.read("sys/class/powercap/intel-rapl:1/max_energy_range_uj")))
    _tree(tmp_path, "300 0 350 1100 200 0 0 50 0 0", 1_500_000,
          (101_000_000, 20_500_000, 2_000_000 + 60_000_000 - max1, 2_100_000), 2_400_000)
    sample = reader.derive(before, reader.snapshot(), 2.0)
    assert sample["busy"] == 0.5 and sample["steal"] == 0.05 and sample["pressure_cpu"] == 0.25
    assert sample["load1"] == 1.5 and sample["runnable"] == 3
    assert sample["mem_used_gib"] == 2.0 and sample["swap_used_gib"] == 1.0
    assert sample["freq_mhz"] == {"0": 2400, "1": 2500}
    assert sample["rapl_w"]["package-0"] == 50.0 and sample["rapl_w"]["package-1"] == 30.0
    assert sample["rapl_w"]["package-0/dram"] == 10.0 and sample["rapl_w"]["package-1/dram"] == 1.0
    assert channel_watts(sample) == {"rapl": 50.0 + 10.0 + 30.0 + 1.0}


def test_rapl_channel_counts_packages_and_dram_once():
    # core and uncore are inside their package; psys (client parts) already holds the packages
    sample = {"rapl_w": {"package-0": 40.0, "package-0/core": 30.0, "package-0/uncore": 2.0,
                         "package-0/dram": 5.0, "psys": 60.0}}
    assert channel_watts(sample) == {"rapl": 45.0}


def test_a_machine_without_rapl_cpufreq_or_psi_names_each_in_one_line(tmp_path):
    root = tmp_path / "vm"
    (root / "proc").mkdir(parents=True)
    (root / "proc" / "stat").write_text("cpu  1 0 1 10 0 0 0 0 0 0\n")
    (root / "proc" / "cpuinfo").write_text("processor\t: 0\ncpu MHz\t\t: 2599.998\n\nprocessor\t: 1\ncpu MHz\t\t: 2599.998\n")
    (root / "sys" / "devices" / "system" / "cpu" / "cpu0").mkdir(parents=True)
    (root / "sys" / "devices" / "system" / "cpu" / "cpu1").mkdir(parents=True)
    monitor = Monitor(1.0, root=Root(str(root)))
    note = monitor.note()
    assert note.startswith("monitor: every 1 s: ") and "\n" not in note
    assert "frequency of 2 CPUs (/proc/cpuinfo: no cpufreq)" in note
    assert "not here: pressure (no /proc/pressure" in note and "RAPL (no counters in /sys/class/powercap" in note
    assert "GPU (not this machine)" in note and "node meter (not this machine)" in note
    assert monitor.reader.snapshot()["freq_mhz"] == {0: 2600, 1: 2600}


# --- the sampler thread and the store ----------------------------------------------------------------

def test_samples_go_to_the_store_in_phase_order_and_come_back(tmp_path):
    from perflab.store import open_store

    with open_store(str(tmp_path / "m.db")) as store:
        with store.open_campaign("run", {}) as camp:
            monitor = Monitor(0.05, idle_s=0.1)
            monitor.start(lambda rows: store.add_monitor_samples(camp.id, rows))
            monitor.idle(phase="idle-before")
            monitor.set_phase("study")
            monitor.sample()  # at least one sample in the study, however loaded the machine
            monitor.idle(phase="idle-after")
            monitor.stop()
        rows = store.monitor_samples(camp.id)
    assert rows[0]["phase"] == "sources" and rows[0]["sample"]["interval_s"] == 0.05
    order = ["sources", "idle-before", "study", "idle-after"]
    phases = [order.index(r["phase"]) for r in rows]
    assert phases == sorted(phases) and {"study", "idle-after"} <= {r["phase"] for r in rows}
    assert all(b["t_ns"] > a["t_ns"] for a, b in zip(rows, rows[1:]))
    assert len(rows) == monitor.samples + 1
    # busy is a share of the jiffies between two samples: the manual sample right after a tick
    # may fall in the same jiffy (none then), every sample 20 ms or more after the last has one
    assert all("busy" in b["sample"] for a, b in zip(rows[1:], rows[2:]) if b["t_ns"] - a["t_ns"] >= 20_000_000)
    assert any("busy" in r["sample"] for r in rows[1:])


def test_a_gpu_is_sampled_through_nvidia_smi(tmp_path, monkeypatch):
    # A stand-in nvidia-smi that answers the monitor's exact query with the H200 recording.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "nvidia-smi"
    fake.write_text(f"#!/bin/sh\n[ \"$1\" = \"--query-gpu={','.join(GPU_FIELDS)}\" ] || exit 9\n"
                    f"cat {shlex.quote(str(NVIDIA / 'query.csv'))}\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monitor = Monitor(1.0, ipmi_argv=None)
    assert "GPU power and utilisation (1 by nvidia-smi)" in monitor.note()
    monitor.start(lambda rows: None)
    try:
        row = monitor.sample()
    finally:
        monitor.stop()
    assert row["sample"]["gpus"][0]["power_w"] == 80.79 and channel_watts(row["sample"])["gpu"] == 80.79


# --- energy gross and net of idle power ---------------------------------------------------------------

def _rows(idle_w: list[float], study_w: list[float], after_w: list[float], busy: float = 0.02) -> list[dict]:
    rows = [{"t_ns": 0, "wall": 0.0, "phase": "sources", "sample": {"interval_s": 1.0, "idle_s": 5.0,
                                                                  "have": [], "lacks": []}}]
    t = 0
    for phase, ws in (("idle-before", idle_w), ("study", study_w), ("idle-after", after_w)):
        for w in ws:
            t += 1_000_000_000
            rows.append({"t_ns": t, "wall": t / 1e9, "phase": phase,
                         "sample": {"ipmi_w": w, "busy": 0.9 if phase == "study" else busy}})
    return rows


def test_net_energy_subtracts_the_idle_mean_over_the_study_time():
    idle = [49.0, 50.0, 51.0, 50.0, 49.5, 50.5]
    res = analyse(_rows(idle[:3], [150.0] * 100, idle[3:]), events=1000.0, events_metric="events")
    (e,) = res.energy
    assert e.channel == "node" and e.seconds == 100.0 and e.gross_j == 15000.0
    assert e.idle_w == 50.0 and e.idle_samples == 6 and e.level == 0.95
    assert (e.idle_before_w, e.idle_after_w) == (50.0, 50.0)
    # Welch's t of study (constant) less idle: idle variance 0.5 W^2 over 6 samples, lag-1
    # autocorrelation -0.1 taken as 0 (effective size 6), 5 degrees of freedom, times 100 s
    from scipy.stats import t as student_t

    half = float(student_t.ppf(0.975, 5)) * (0.5 / 6) ** 0.5 * 100
    assert e.net_j_ci == pytest.approx((10000.0 - half, 10000.0 + half))
    assert e.net_j_per_event_ci == pytest.approx(((10000.0 - half) / 1000, (10000.0 + half) / 1000))
    assert e.idle_w_ci == pytest.approx((50.0 - half / 100, 50.0 + half / 100))
    assert [p.phase for p in res.phases] == ["idle-before", "study", "idle-after"]
    assert res.phases[1].watts == {"node": 150.0} and not res.notes
    assert MonitorResult.from_dict(res.as_dict()) == res


def test_too_few_idle_samples_read_cannot_tell_with_the_option_that_would_tell():
    res = analyse(_rows([50.0, 50.0], [150.0] * 10, [50.0]), events=100.0, events_metric="events")
    (e,) = res.energy
    assert e.net_j is None and e.gross_j_per_event == 15.0 and e.idle_samples == 3
    assert any(f"cannot tell from 3 idle samples (at least {MIN_IDLE_SAMPLES})" in n and "--idle" in n
               for n in res.notes)


def test_a_busy_idle_phase_is_said():
    res = analyse(_rows([50.0] * 3, [150.0] * 10, [50.0] * 3, busy=0.97), events=100.0)
    assert any("idle phases were not idle (CPUs 97% busy idle-before, 97% busy idle-after" in n for n in res.notes)


# --- the command line ---------------------------------------------------------------------------------


def test_a_recorded_h200_node_shows_its_cpu_job_and_its_gpu_idle_power():
    # bench/monitor_gpu_node.py on an H200 node: 16 CPU-bound copies for 20 s between idle phases
    # of 10 s; the GPU did nothing, so its energy over the job is its idle power's.
    import json

    from perflab.report.terminal.monitor import energy_line

    rec = json.loads((DATA / "monitor" / "h200-cpu-job.json").read_text())
    res = analyse(rec["rows"], rec["events"], "events")
    idle, study, after = res.phases
    assert (idle.phase, study.phase, after.phase) == ("idle-before", "study", "idle-after")
    assert study.busy > 0.9 and idle.busy < 0.05 and after.busy < 0.05
    assert res.have[-1] == "GPU power and utilisation (1 by nvidia-smi)"
    (gpu,) = res.energy
    assert gpu.channel == "gpu" and 70 < gpu.idle_w < 90 and gpu.idle_samples >= MIN_IDLE_SAMPLES
    assert gpu.net_j_ci[0] <= 0 <= gpu.net_j_ci[1] and abs(gpu.net_j) < 0.01 * gpu.gross_j
    assert "drew nothing on this channel that its idle power can tell apart" in energy_line(gpu)


def test_the_harness_finds_planted_power_and_stays_quiet_without_it():
    # checks/monitor.py at 150 trials a model (bench/verdicts.py monitor runs 400 and more)
    from perflab.checks.monitor import MODELS, rates

    for model in MODELS:
        r = rates(model, runs=150)
        assert r["quiet"] >= 0.93 and r["found"] >= 0.9 and r["coverage"] >= 0.92, (model, r)


def test_runs_closer_than_half_an_interval_are_one_band():
    from perflab.report.html.monitor import merged_spans

    assert merged_spans([(5.0, 6.0), (0.0, 1.0), (1.2, 2.0), (2.0, 2.5)], 0.5) == [(0.0, 2.5), (5.0, 6.0)]
    assert merged_spans([(0.0, 3.0), (1.0, 2.0)], 0.0) == [(0.0, 3.0)]  # copies that overlap


def test_a_sink_that_fails_keeps_the_samples_until_the_last_flush():
    calls: list[int] = []

    def sink(rows):
        calls.append(len(rows))
        if len(calls) < 3:
            raise PerflabError("the database server went away")

    monitor = Monitor(60.0, gpu_argv=None, ipmi_argv=None)
    monitor.start(sink)  # the sources row: refused, kept
    monitor.sample()
    monitor.set_phase("study")  # refused again, kept
    monitor.stop()  # one last sample; the third flush takes all three rows
    assert calls == [1, 2, 3]
    monitor2 = Monitor(60.0, gpu_argv=None, ipmi_argv=None)
    monitor2.start(lambda rows: (_ for _ in ()).throw(PerflabError("gone for good")))
    with pytest.raises(PerflabError, match="gone for good"):
        monitor2.stop()


def test_csv_and_json_exports_of_a_recorded_gpu_node():
    import csv
    import io
    import json

    from perflab.report.monitor_export import monitor_csv, monitor_json

    rec = json.loads((DATA / "monitor" / "h200-cpu-job.json").read_text())
    table = list(csv.DictReader(io.StringIO(monitor_csv(rec["rows"]))))
    samples = [r for r in rec["rows"] if r["phase"] != "sources"]
    assert len(table) == len(samples) and table[0]["t_s"] == "0.000"
    assert {"gpu0_power_w", "gpu0_util_pct", "cpu15_mhz", "freq_mhz_mean"} <= set(table[0])
    assert float(table[0]["gpu0_power_w"]) == samples[0]["sample"]["gpus"][0]["power_w"]
    assert [r["phase"] for r in table][:1] == ["idle-before"] and table[-1]["phase"] == "idle-after"
    res = analyse(rec["rows"], rec["events"], "events", campaign_id=7)
    out = monitor_json(7, rec["rows"], res)
    assert out["campaign"] == 7 and len(out["samples"]) == len(samples)
    assert out["sources"][0]["interval_s"] == 1.0 and out["summary"]["energy"][0]["channel"] == "gpu"
