"""perf stat -x outputs recorded on hardware with a PMU (tests/data/perfstat/README.md says where):
perflab's parser, then the studies' own arithmetic on the parsed counters (cores: IPC and effective
frequency per CPU; frontend: misses per dispatch; instances: IPC and LLC misses per unit; the perf
energy event), each checked against the metric column perf itself printed beside the count."""

from __future__ import annotations

from pathlib import Path

import pytest

from perflab.measure import perfstat
from perflab.model import RunResult
from perflab.platform.energy import parse_perf_energy
from perflab.studies.frontend import study as fe
from perflab.studies.cores.counters import per_cpu_counters
from perflab.studies.cores.result import CoresResult, CpuRow
from perflab.studies.instances.result import counter_ratio

DATA = Path(__file__).parents[1] / "data" / "perfstat"
AWARDS = "amd-ryzen7-2700x-ghc-awards.csv"
BESS = "intel-bess-attached-interval-multiplexed.csv"
HYBRID = "intel-hybrid-saxpy-llc-per-task.csv"


def text(name: str) -> str:
    return (DATA / name).read_text()


def printed(name: str, event: str) -> list[float]:
    """The metric values perf printed beside ``event`` (column 6 of a count row, one per row),
    read straight from the file, not through perflab's parser."""
    out = []
    for line in text(name).splitlines():
        f = line.split(",")
        if line.startswith("#") or len(f) < 7:
            continue
        if len(f) >= 8 and (f[0].strip() == "summary" or f[0].strip().replace(".", "").isdigit()):
            f = f[1:]  # -I timestamp or --summary
        if f[2] == event and f[5]:
            out.append(float(f[5]))
    return out


def result(counters: dict[str, float], **metrics: float) -> RunResult:
    return RunResult(wall_ns=1, user_s=0, sys_s=0, maxrss_kb=1, minflt=0, majflt=0, nvcsw=0, nivcsw=0,
                     exit_code=0, counters=dict(counters), metrics=dict(metrics))


def intervals(name: str) -> list[dict[str, float]]:
    """Counters of each -I interval of a recording, each parsed on its own."""
    blocks: dict[str, list[str]] = {}
    for line in text(name).splitlines():
        if line.strip() and not line.startswith("#"):
            blocks.setdefault(line.split(",")[0], []).append(line)
    return [perfstat.parse("\n".join(lines))[0] for lines in blocks.values()]


def test_every_recording_parses_with_counts_and_nothing_unsupported():
    for path in sorted(DATA.glob("*.csv")):
        if path.name.startswith(("kvm-", "virtualbox-")):
            continue  # the absence path: tested in test_frontend.py and test_cores.py
        counters, unsupported = perfstat.parse(path.read_text())
        assert unsupported == [], path.name
        assert counters and all(v >= 0 for v in counters.values()), path.name


def test_amd_default_events_counts_and_perf_own_ratios():
    counters, _ = perfstat.parse(text(AWARDS))
    # every count row once; the metric-only row ",,,,,0.04,stalled cycles per insn" adds nothing
    assert counters == {"task-clock": 64701.16, "context-switches": 6733.0, "cpu-migrations": 153.0,
                        "page-faults": 1291.0, "cycles": 264690533400.0,
                        "stalled-cycles-frontend": 5760949125.0, "stalled-cycles-backend": 18551959048.0,
                        "instructions": 425064193324.0, "branches": 85795758030.0,
                        "branch-misses": 2404110819.0}
    assert printed(AWARDS, "branch-misses") == [2.80]
    assert 100 * counters["branch-misses"] / counters["branches"] == pytest.approx(2.80, abs=0.005)
    header, _ = perfstat.parse(text("amd-ryzen7-2700x-ghc-awards-o-file.csv"))  # -o file: '# started on'
    assert header == {"instructions": 425115750611.0, "branch-misses": 2397300420.0}


def test_cores_ipc_and_effective_frequency_per_cpu_match_perf():
    """CPU 0 ran the AMD recording, CPU 1 the three 1-second intervals of the multiplexed Intel one
    (each interval one run), CPU 2 the KVM guest without a PMU."""
    res = CoresResult(cpus=[CpuRow(cpu=c, socket=0, core=c, node=0, siblings=(c,)) for c in range(3)])
    amd, _ = perfstat.parse(text(AWARDS))
    kvm, _ = perfstat.parse(text("kvm-no-pmu-minihlt.csv"))
    runs = [(0, amd)] + [(1, c) for c in intervals(BESS)] + [(2, kvm)]
    per_cpu_counters(res, runs)
    amd_row, bess_row, kvm_row = res.cpus
    assert amd_row.ghz == pytest.approx(printed(AWARDS, "cycles")[0], abs=0.0005)  # 4.091 GHz
    assert amd_row.ipc == pytest.approx(printed(AWARDS, "instructions")[0], abs=0.005)  # 1.61
    assert printed(BESS, "cycles") == [2.585] * 3 and printed(BESS, "instructions") == [2.01] * 3
    assert bess_row.ghz == pytest.approx(2.585, abs=0.0005)
    assert bess_row.ipc == pytest.approx(2.01, abs=0.005)
    assert kvm_row.ipc is None and kvm_row.ghz is None
    assert not res.notes  # counted somewhere: no "no hardware counters here" note


def test_interval_sum_keeps_perf_ratios_and_matches_the_rows():
    counters, _ = perfstat.parse(text(BESS))
    # the three intervals' rows added by hand from the file
    assert counters["cycles"] == 2586342284 + 2585963417 + 2585989085
    assert counters["iTLB-load-misses"] == 1021 + 1076 + 1101
    assert counters["L1-icache-load-misses"] == 30166 + 29921 + 30778
    assert counters["task-clock"] == pytest.approx(1000.606801 + 1000.470201 + 1000.431757)
    assert counters["cycles"] / (counters["task-clock"] * 1e6) == pytest.approx(2.585, abs=0.0005)


@pytest.mark.parametrize("name", ["intel-8cpu-interval-summary-no-column-perf5.12.csv",
                                  "intel-8cpu-interval-summary-column-perf5.13.csv"])
def test_summary_rows_replace_the_intervals_instead_of_doubling_them(name):
    counters, _ = perfstat.parse(text(name))
    rows = [line.split(",") for line in text(name).splitlines()]
    cycles = [float(f[-7]) for f in rows if f[-5] == "cycles"]
    assert len(cycles) == 2 and cycles[0] == cycles[1]  # the interval and the summary row
    assert counters["cycles"] == cycles[0]
    ipc = counters["instructions"] / counters["cycles"]
    assert ipc == pytest.approx(printed(name, "instructions")[-1], abs=0.005)  # 0.51 / 0.53


def test_metric_group_rows_carry_no_count():
    name = "intel-spr-224cpu-system-wide-metricgroups.csv"
    counters, unsupported = perfstat.parse(text(name))
    assert sorted(counters) == ["branch-misses", "branches", "context-switches", "cpu-clock",
                                "cpu-migrations", "cycles", "instructions", "page-faults"]
    assert counters["instructions"] / counters["cycles"] == pytest.approx(0.73, abs=0.005)


def test_frontend_misses_per_dispatch_on_the_recorded_itlb_and_l1i_counts():
    """BESS's own dispatch count is not in the recording: a dispatch here is 1000 instructions of
    each interval (about 5.2e9 instructions per interval, so 5.2e6 dispatches), the arithmetic
    fe._per_dispatch applies to a workload's iterations."""
    got = [(i, result(c)) for i, c in enumerate(intervals(BESS))]
    assert fe._per_dispatch(got, "iTLB-load-misses", 5_200_000) == pytest.approx(1076 / 5.2e6)
    assert fe._per_dispatch(got, "L1-icache-load-misses", 5_200_000) == pytest.approx(30166 / 5.2e6)
    # a run without the count gives no figure rather than a wrong one
    kvm, _ = perfstat.parse(text("kvm-no-pmu-perf6.1.csv"))
    assert fe._per_dispatch(got + [(9, result(kvm))], "iTLB-load-misses", 5_200_000) is None


def test_instances_ipc_and_llc_misses_pooled_over_copies():
    """The three intervals as three copies of one point: instances pools counts over copies."""
    counts = intervals(BESS)
    copies = [result(c) for c in counts]
    llc = printed(BESS, "LLC-load-misses")  # 83.39, 82.19, 83.59 "% of all LL-cache hits"
    assert 100 * counter_ratio(copies[:1], "LLC-load-misses", "LLC-loads")[0] == pytest.approx(llc[0], abs=0.005)
    # from the second interval on, this perf (2019) divided by the mean of the LLC loads of the
    # intervals so far (its interval-mode shadow statistics); the parsed counts reproduce that too
    loads = [c["LLC-loads"] for c in counts]
    for k, c in enumerate(counts):
        assert 100 * c["LLC-load-misses"] / (sum(loads[: k + 1]) / (k + 1)) == pytest.approx(llc[k], abs=0.005)
    own = [counter_ratio([copy], "LLC-load-misses", "LLC-loads")[0] for copy in copies]
    pooled = counter_ratio(copies, "LLC-load-misses", "LLC-loads")[0]
    assert pooled == pytest.approx((19024 + 18859 + 18797) / (22814 + 23075 + 21574))
    assert min(own) < pooled < max(own)
    assert counter_ratio(copies, "instructions", "cycles")[0] == pytest.approx(2.01, abs=0.005)
    # per unit of work: the work metric each copy printed (here: its task-clock seconds)
    per_s = counter_ratio([result(c, work=c["task-clock"] / 1000) for c in intervals(BESS)],
                          "LLC-load-misses", "work")[0]
    assert per_s == pytest.approx((19024 + 18859 + 18797) / 3.001508759, rel=1e-6)


def test_hybrid_rows_of_one_task_are_weighted_not_summed():
    """perf scaled the E-core rows (the task ran there 1 % of its time) to the whole run: the
    E-core cycles alone would be 1.14e9 cycles in the 11 ms it ran there, 103 GHz."""
    counters, _ = perfstat.parse(text(HYBRID))
    atom_ipc, core_ipc = printed(HYBRID, "cpu_atom/instructions/") + printed(HYBRID, "cpu_core/instructions/")
    assert (atom_ipc, core_ipc) == (2.60, 4.17)
    rows = {f[2]: float(f[0]) for f in (line.split(",") for line in text(HYBRID).splitlines())
            if len(f) == 7 and f[2].startswith("cpu_")}
    atom, core = rows["cpu_atom/cycles/"], rows["cpu_core/cycles/"]
    # a whole-run estimate lies between the two per-PMU whole-run estimates, near the P-core's
    # (98 % of the time there); their sum (2.73e9) would not
    assert min(atom, core) < counters["cycles"] < max(atom, core)
    assert counters["cycles"] == pytest.approx(core, rel=0.01)
    ipc = counter_ratio([result(counters)], "instructions", "cycles")[0]
    assert atom_ipc < ipc < core_ipc and ipc == pytest.approx(core_ipc, abs=0.02)
    llc = 100 * counter_ratio([result(counters)], "LLC-load-misses", "LLC-loads")[0]
    assert printed(HYBRID, "cpu_atom/LLC-load-misses/")[0] < llc < printed(HYBRID, "cpu_core/LLC-load-misses/")[0]


@pytest.mark.parametrize("name", ["intel-xeon-e5-2630v3-memcached-system-wide-energy.csv",
                                  "intel-xeon-e5-2630v3-memcached-loadonly-energy.csv"])
def test_perf_energy_event_in_joules(name):
    joules = parse_perf_energy(text(name))
    counters, _ = perfstat.parse(text(name))
    assert list(joules) == ["energy-pkg"] and joules["energy-pkg"] == counters["power/energy-pkg/"]
    # perf printed joules per second of cpu-clock (summed over the 32 CPUs) beside the count
    per_cpu_s = joules["energy-pkg"] / (counters["cpu-clock"] / 1000)
    assert per_cpu_s == pytest.approx(printed(name, "power/energy-pkg/")[0], abs=0.0005)
    # and the system-wide IPC and frequency perf printed (cycles over all CPUs' clock)
    assert counters["instructions"] / counters["cycles"] == pytest.approx(printed(name, "instructions")[0], abs=0.005)
    assert counters["cycles"] / (counters["cpu-clock"] * 1e6) == pytest.approx(printed(name, "cycles")[0], abs=0.0005)


def test_user_space_only_counts_keep_the_names_asked_for(capsys, monkeypatch):
    # Recorded without root: perf names every event "task-clock:u"; the counts keep the names
    # perflab asked for, and a note says once that the kernel's share is left out.
    monkeypatch.setattr(perfstat, "_noted", set())
    monkeypatch.setattr(perfstat, "_unsupported", set())
    counters, unsupported = perfstat.parse(text("kvm-no-pmu-user-space-only-perf6.1.csv"))
    assert "task-clock:u" in counters and "task-clock" not in counters
    counters, unsupported = perfstat.as_asked(counters, unsupported, ())
    assert sorted(counters) == sorted(perfstat.SOFTWARE_EVENTS) and counters["page-faults"] == 46
    assert unsupported == list(perfstat.HARDWARE_EVENTS)
    assert "user space only" in capsys.readouterr().err
    # an event asked for as "cycles:u" keeps its name, and no note is due
    monkeypatch.setattr(perfstat, "_noted", set())
    assert perfstat.as_asked({"cycles:u": 5.0}, [], ("cycles:u",)) == ({"cycles:u": 5.0}, [])
    assert capsys.readouterr().err == ""
    # a root's names pass as they are
    rooted = perfstat.parse(text("kvm-no-pmu-perf6.1.csv"))
    assert perfstat.as_asked(*rooted, ("iTLB-load-misses", "L1-icache-load-misses", "task-clock",
                                       "duration_time")) == rooted
    assert capsys.readouterr().err == ""
