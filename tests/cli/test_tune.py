"""`perflab machine tune` / `reset` on fixture trees: every knob, cgroup v1 and v2, intel_pstate,
a second tune, a killed tune, a stale state, and what campaigns record of the machine state."""

from __future__ import annotations

import json
import os
import pathlib
import shutil

import pytest

from perflab.cli import main
from perflab.platform.tune import state as tune_state
from perflab.platform.sysfs import Root
from perflab.platform.tune.knobs import TuneOptions, default_cpus, format_cpumask, tune
from perflab.platform.tune.reset import reset

DATA = pathlib.Path(__file__).parents[1] / "data" / "tune"
HYBRID = "20em64t-hybrid-1p6c2t+2ca4co1t"
# Files whose writes a tree cannot mimic: cgroup.procs (the kernel moves a process, a tree appends
# its pid) and cgroup.subtree_control (the kernel adds or drops one controller, a tree keeps the
# last write). Everything else must read byte for byte as before after reset.
SPECIAL = {"cgroup.procs", "cgroup.subtree_control"}


@pytest.fixture(autouse=True)
def state_dir(tmp_path, monkeypatch):
    d = tmp_path / "state"
    monkeypatch.setenv("PERFLAB_STATE_DIR", str(d))
    return d


def tree(tmp_path: pathlib.Path, name: str) -> pathlib.Path:
    dst = tmp_path / name
    shutil.copytree(DATA / name, dst, symlinks=True)
    return dst


def snapshot(top: pathlib.Path) -> dict[str, bytes]:
    out = {}
    for dirpath, _dirs, files in os.walk(top):
        for f in files:
            p = pathlib.Path(dirpath) / f
            if f not in SPECIAL and not p.is_symlink():
                out[str(p.relative_to(top))] = p.read_bytes()
    return out


def cli(capsys, *args: str) -> tuple[int, str, str]:
    # One knob a line, unwrapped: a pytest-xdist worker has COLUMNS=80, and rich wraps there.
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "400"
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    out, err = capsys.readouterr()
    return code, out, err


def read(top: pathlib.Path, rel: str) -> str:
    return (top / rel).read_text()


def test_v1_guest_tune_then_reset_restores_every_file(tmp_path, capsys, state_dir):
    top = tree(tmp_path, "v1-guest")
    before = snapshot(top)
    code, out, _ = cli(capsys, "machine", "--root", str(top), "tune")
    assert code == 0, out
    # what it was, what it sets, and why; absent knobs named as such
    assert "2 -> 0 (/proc/sys/kernel/randomize_va_space): ASLR off" in out
    assert "100000 -> 1" in out
    for knob in ("turbo", "governor", "min_freq"):
        assert any(line.startswith(knob) and "absent" in line for line in out.splitlines()), out
    assert read(top, "proc/sys/kernel/randomize_va_space") == "0\n"
    assert read(top, "proc/sys/kernel/perf_event_max_sample_rate") == "1\n"
    assert read(top, "proc/irq/default_smp_affinity") == "1\n"  # CPU 0 only
    assert read(top, "proc/irq/25/smp_affinity_list") == "0\n"
    assert read(top, "proc/irq/0/smp_affinity_list") == "0\n"  # never on CPU 1: not touched
    cg = top / "sys/fs/cgroup/cpuset"
    assert read(top, "sys/fs/cgroup/cpuset/perflab.bench/cpuset.cpus") == "1\n"
    assert read(top, "sys/fs/cgroup/cpuset/perflab.system/cpuset.cpus") == "0\n"
    assert read(top, "sys/fs/cgroup/cpuset/perflab.system/cpuset.mems") == "0\n"
    # every process but the bound kernel thread (ksoftirqd/1, PF_NO_SETAFFINITY) moved
    assert (cg / "perflab.system/cgroup.procs").read_text().split() == ["1", "2", "16", "700", "7011"]
    assert "cannot move (the kernel refuses; per-CPU kernel threads): ksoftirqd/1" in out
    assert "docker (1)" in out and "thp        kept     madvise" in out
    state = json.loads((state_dir / "tune.json").read_text())
    assert {e["path"]: e["old"] for e in state["files"]}["proc/sys/kernel/randomize_va_space"] == "2"
    assert state["cpuset"]["kind"] == "v1" and state["cpuset"]["created"] == ["perflab.system", "perflab.bench"]

    code, out, _ = cli(capsys, "machine", "--root", str(top))
    assert "tuned by perflab since" in out and "aslr: /proc/sys/kernel/randomize_va_space was 2, now 0" in out
    assert "cpuset: /sys/fs/cgroup/cpuset/perflab.bench CPUs 1" in out

    code, out, _ = cli(capsys, "machine", "reset")
    assert code == 0 and "every value perflab changed is back" in out
    assert snapshot(top) == before
    assert not (cg / "perflab.bench").exists() and not (cg / "perflab.system").exists()
    assert (cg / "cgroup.procs").read_text().split()[-5:] == ["1", "2", "16", "700", "7011"]
    assert not state_dir.joinpath("tune.json").exists()
    code, out, _ = cli(capsys, "machine", "reset")
    assert code == 0 and "not tuned by perflab: nothing to restore" in out


def test_v2_boost_smt_isolated_cpus(tmp_path, capsys):
    top = tree(tmp_path, "v2-boost-smt")
    before = snapshot(top)
    assert default_cpus(Root(str(top))) == (2, 3)  # the isolated CPUs
    code, out, _ = cli(capsys, "machine", "--root", str(top), "tune", "--cpus", "3", "--smt-off", "--thp", "madvise")
    assert code == 0, out
    assert read(top, "sys/devices/system/cpu/cpufreq/boost") == "0\n"
    assert read(top, "sys/devices/system/cpu/cpu3/cpufreq/scaling_governor") == "performance\n"
    assert read(top, "sys/devices/system/cpu/cpu2/cpufreq/scaling_governor") == "schedutil\n"
    assert read(top, "sys/devices/system/cpu/cpu3/cpufreq/scaling_min_freq") == "3000000\n"
    assert read(top, "sys/devices/system/cpu/cpu1/online") == "0\n"  # CPU 3's sibling
    assert read(top, "sys/kernel/mm/transparent_hugepage/enabled") == "madvise\n"
    # CPU 1 went offline with SMT: the rest of the system keeps CPUs 0 and 2
    assert read(top, "proc/irq/default_smp_affinity") == "5\n"
    assert read(top, "proc/irq/8/smp_affinity_list") == "0,2\n"
    cg = top / "sys/fs/cgroup"
    assert read(top, "sys/fs/cgroup/cgroup.subtree_control") == "+cpuset\n"
    for child in ("init.scope", "system.slice", "user.slice"):
        assert read(top, f"sys/fs/cgroup/{child}/cpuset.cpus") == "0,2\n"
    assert read(top, "sys/fs/cgroup/perflab.bench/cpuset.cpus") == "3\n"
    assert (cg / "perflab.system/cgroup.procs").read_text().split() == ["2", "16"]
    assert "CPU 3 isolated (isolcpus, nohz_full, rcu_nocbs)" in out
    assert "irqbalance runs (pid 812)" in " ".join(out.split())
    code, shown, _ = cli(capsys, "machine", "--root", str(top), "--json")
    tune_json = json.loads(shown)["tune"]
    assert tune_json["tuned"] and "smt" in tune_json["changed"] and tune_json["knobs"]["cpufreq_boost"] == "0"
    code, out, _ = cli(capsys, "machine", "reset")
    assert code == 0, out
    after = snapshot(top)
    # the kernel shows every THP mode with the one in use bracketed; a tree keeps the word written
    thp = "sys/kernel/mm/transparent_hugepage/enabled"
    assert after.pop(thp) == b"always\n" and before.pop(thp) == b"[always] madvise never\n"
    assert after == before
    assert read(top, "sys/fs/cgroup/cgroup.subtree_control") == "-cpuset\n"  # enabled by tune, disabled again
    assert not (cg / "perflab.bench").exists()


def test_smt_siblings_stay_online_unless_asked(tmp_path, capsys):
    top = tree(tmp_path, "v2-boost-smt")
    code, out, _ = cli(capsys, "machine", "--root", str(top), "tune", "--cpus", "3", "--only", "smt")
    assert code == 0 and "siblings 1 stay online (--smt-off takes them offline)" in out
    assert read(top, "sys/devices/system/cpu/cpu1/online") == "1\n"


def test_intel_pstate_machine(tmp_path, capsys, topology_root):
    top = tmp_path / "hybrid"
    shutil.copytree(topology_root(HYBRID).path, top, symlinks=True)
    files = ["sys/devices/system/cpu/intel_pstate/no_turbo"] + [
        f"sys/devices/system/cpu/cpufreq/policy{c}/{f}" for c in (2, 3) for f in ("scaling_governor", "scaling_min_freq")]
    before = {f: read(top, f) for f in files}
    code, out, _ = cli(capsys, "machine", "--root", str(top), "tune", "--cpus", "2-3",
                       "--only", "turbo,governor,min_freq,aslr,cpuset")
    assert code == 0, out
    assert read(top, "sys/devices/system/cpu/intel_pstate/no_turbo") == "1\n"
    assert read(top, "sys/devices/system/cpu/cpufreq/policy2/scaling_governor") == "performance\n"
    assert read(top, "sys/devices/system/cpu/cpufreq/policy2/scaling_min_freq") == \
        read(top, "sys/devices/system/cpu/cpufreq/policy2/scaling_max_freq")
    assert read(top, "sys/devices/system/cpu/cpufreq/policy0/scaling_governor") == "powersave\n"
    assert "powersave -> performance (CPU 2-3)" in out
    assert any(line.startswith("aslr") and "absent" in line for line in out.splitlines())
    assert any(line.startswith("cpuset") and "absent" in line for line in out.splitlines())
    code, out, _ = cli(capsys, "machine", "reset")
    assert code == 0, out
    assert {f: read(top, f) for f in files} == before


def test_second_tune_keeps_the_first_values(tmp_path, state_dir):
    top = tree(tmp_path, "v1-guest")
    root = Root(str(top))
    tune(root, TuneOptions(cpus=(1,), only=frozenset({"aslr"})))
    (top / "proc/sys/kernel/randomize_va_space").write_text("1\n")  # someone else, in between
    tune(root, TuneOptions(cpus=(1,), only=frozenset({"aslr", "perf_rate"})))
    state = tune_state.load()
    assert [(e["knob"], e["old"]) for e in state["files"]] == [("aslr", "2"), ("perf_rate", "100000")]
    assert len(state["sessions"]) == 2
    report = reset()
    assert not report.problems
    assert read(top, "proc/sys/kernel/randomize_va_space") == "2\n"
    assert read(top, "proc/sys/kernel/perf_event_max_sample_rate") == "100000\n"


def test_a_killed_tune_is_restored_by_reset(tmp_path, monkeypatch, state_dir):
    top = tree(tmp_path, "v1-guest")
    before = snapshot(top)
    writes = []
    real = Root.write

    def dying(self, rel, text, append=False):
        if len(writes) == 4:  # ASLR, sample rate, two IRQs written; then the process dies
            raise SystemExit(137)
        writes.append(rel)
        real(self, rel, text, append)

    monkeypatch.setattr(Root, "write", dying)
    with pytest.raises(SystemExit):
        tune(Root(str(top)), TuneOptions(cpus=(1,)))
    monkeypatch.setattr(Root, "write", real)
    assert read(top, "proc/sys/kernel/randomize_va_space") == "0\n"
    state = tune_state.load()
    assert state is not None and state["files"]  # written before the first change
    report = reset()
    assert not report.problems
    assert snapshot(top) == before
    assert tune_state.load() is None


def test_a_state_from_an_earlier_boot_is_dropped(tmp_path, capsys, state_dir):
    top = tree(tmp_path, "v1-guest")
    tune(Root(str(top)), TuneOptions(cpus=(1,), only=frozenset({"aslr"})))
    (top / "proc/sys/kernel/random/boot_id").write_text("another-boot\n")
    code, out, _ = cli(capsys, "machine", "reset")
    assert code == 0 and "from an earlier boot" in out
    assert tune_state.load() is None


def test_dry_run_changes_nothing_and_bad_knobs_are_one_line(tmp_path, capsys, state_dir):
    top = tree(tmp_path, "v1-guest")
    before = snapshot(top)
    code, out, _ = cli(capsys, "machine", "--root", str(top), "tune", "--dry-run")
    assert code == 0 and "would set: 2 -> 0" in out and "5 processes would move" in out
    assert snapshot(top) == before and not state_dir.exists()
    code, _, err = cli(capsys, "machine", "--root", str(top), "tune", "--only", "aslr,bogus")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "knobs are turbo," in err
    code, _, err = cli(capsys, "machine", "--root", str(top), "tune", "--cpus", "7")
    assert code == 2 and "CPU 7 is not online" in err


def test_not_root_is_one_line_and_exit_2(capsys, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    code, _, err = cli(capsys, "machine", "tune", "--only", "aslr")
    assert code == 2 and err.strip().splitlines() == [
        "perflab: error: perflab machine tune writes /proc/sys, /sys and cgroups: run it as root (sudo "
        "perflab machine tune); --dry-run shows what it would change"]


def test_a_study_session_left_behind_is_named_by_the_next_command(tmp_path, state_dir):
    top = tree(tmp_path, "v1-guest")
    gone = {"host": os.uname().nodename, "boot": Root().read("proc/sys/kernel/random/boot_id"),
            "pid": 1, "start": -5}  # pid 1 never started at tick -5: that perflab is gone
    session = {"id": "x", "kind": "study", "command": "perflab cores --tune", "owner": gone, "cpus": [1]}
    tune(Root(str(top)), TuneOptions(cpus=(1,), only=frozenset({"aslr"})), kind="study", session=session)
    state = tune_state.load()
    state["boot"] = Root().read("proc/sys/kernel/random/boot_id")  # as if this machine's
    tune_state.save(state)
    line = tune_state.startup_warning()
    assert line and "still tuned by 'perflab cores --tune'" in line and "'perflab machine reset'" in line


def test_machine_state_difference_and_summary():
    a = {"tuned": False, "knobs": {"aslr": "2", "perf_event_max_sample_rate": "100000"}}
    b = {"tuned": True, "since": "x", "changed": ["aslr"], "knobs": {"aslr": "0", "perf_event_max_sample_rate": "100000"}}
    line = tune_state.difference(a, b)
    assert line.startswith(tune_state.DIFFERS) and "A untuned, B tuned" in line and "aslr 2 vs 0" in line
    assert "perf_event" not in line
    assert tune_state.difference(a, dict(a)) is None and tune_state.difference(a, None) is None
    assert tune_state.summary(b).startswith("tuned by perflab (since x; changed: aslr); aslr 0")
    assert format_cpumask([0], "3") == "1" and format_cpumask([0, 33], "00000000,00000003") == "00000002,00000001"


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two usable CPUs")
def test_a_study_pinned_outside_the_tuned_cpus_is_refused_before_tuning(capsys, tmp_path, state_dir):
    code, _, err = cli(capsys, "cores", "--tune-cpus", "1", "--cpus", "0", "--db", str(tmp_path / "s.db"),
                       "--", "true")
    assert code == 2 and err.strip().splitlines() == [
        "perflab: error: --cpus names CPU 0, outside the tuned CPUs 1 its runs are confined to: give "
        "--tune-cpus 0 or --cpus within 1"]
    assert not state_dir.exists() and not (tmp_path / "s.db").exists()


def test_a_fleet_task_may_ask_for_tune():
    from perflab.cli.fleet import _check_study

    _check_study(("cores", "--tune", "--rounds", "5", "--", "true"))
    _check_study(("run", "--tune", "--", "true"))


def test_results_compare_gate_and_report_show_the_machine_state(tmp_path, capsys, monkeypatch):
    import perflab.platform.machine as pm
    from perflab.report.build import build_report
    from perflab.store import open_store

    db = str(tmp_path / "s.db")
    untuned = {"tuned": False, "knobs": {"aslr": "2", "perf_event_max_sample_rate": "100000", "cpuset": "/"}}
    tuned_state = {"tuned": True, "since": "2026-11-26 05:00:00 UTC", "changed": ["aslr", "cpuset"],
                   "knobs": {"aslr": "0", "perf_event_max_sample_rate": "100000", "cpuset": "/perflab.bench"}}
    for i, ms in enumerate((untuned, tuned_state)):
        monkeypatch.setattr(pm, "machine_state", lambda ms=ms: ms)
        args = ["run", "--runs", "6", "--energy", "off", "--db", db, "--", "true"]
        code, _, err = cli(capsys, *(args[:5] + ["--baseline-save", "b"] + args[5:] if i == 0 else args))
        assert code == 0, err
    code, out, _ = cli(capsys, "results", "--db", db, "2")
    assert "machine state: tuned by perflab (since 2026-11-26 05:00:00 UTC; changed: aslr, cpuset); aslr 0" in out
    code, out, _ = cli(capsys, "compare", "--db", db, "1", "2")
    text = " ".join(out.split())  # the console folds the line at its width
    assert text.count("warning: the campaigns ran under different machine states") == 1
    assert "(A untuned, B tuned; aslr 2 vs 0; cpuset / vs /perflab.bench): part of a difference" in text
    code, out, err = cli(capsys, "compare", "--db", db, "--baseline", "b", "2")
    assert "perflab: warning: the campaigns ran under different machine states (A untuned, B tuned" in err
    with open_store(db) as store:
        report = build_report(store, [store.campaign(1), store.campaign(2)])
    table = [t for t in report.machine.tables if t.title == "Machine state per campaign"][0]
    assert [row[:3] for row in table.rows] == [[1, "run", "no"], [2, "run", "yes, since 2026-11-26 05:00:00 UTC"]]


def test_a_study_with_tune_but_not_root_is_one_line_and_measures_nothing(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    code, _, err = cli(capsys, "run", "--tune", "--runs", "2", "--energy", "off", "--db", str(tmp_path / "s.db"),
                       "--", "true")
    assert code == 2 and err.strip().splitlines() == [
        "perflab: error: perflab run --tune writes /proc/sys, /sys and cgroups: run it as root "
        "(sudo perflab run --tune)"]
    assert not (tmp_path / "s.db").exists()


def test_a_cpuset_the_kernel_refuses_is_one_line_and_reset_cleans_up(tmp_path, capsys, monkeypatch):
    top = tree(tmp_path, "v2-boost-smt")
    real = Root.write

    def refusing(self, rel, text, append=False):
        if rel.endswith("perflab.bench/cpuset.cpus"):
            raise OSError(13, "Permission denied", self.join(rel))
        real(self, rel, text, append)

    monkeypatch.setattr(Root, "write", refusing)
    code, out, _ = cli(capsys, "machine", "--root", str(top), "tune", "--cpus", "3", "--only", "cpuset")
    assert code == 0 and "cpuset     failed   cannot build the cpusets: Permission denied" in out
    monkeypatch.setattr(Root, "write", real)
    code, out, _ = cli(capsys, "machine", "reset")
    assert code == 0, out
    assert not (top / "sys/fs/cgroup/perflab.system").exists() and not (top / "sys/fs/cgroup/perflab.bench").exists()
    assert read(top, "sys/fs/cgroup/user.slice/cpuset.cpus") == "\n"


def test_tune_twice_says_already_and_reset_restores_the_first_values(tmp_path, capsys):
    top = tree(tmp_path, "v1-guest")
    before = snapshot(top)
    assert cli(capsys, "machine", "--root", str(top), "tune")[0] == 0
    code, out, _ = cli(capsys, "machine", "--root", str(top), "tune")
    text = " ".join(out.split())  # lines fold at the console's width
    assert code == 0 and "aslr already 0 already" in text
    assert "cpuset kept perflab's cpusets are already in place (perflab.bench = CPU 1)" in text
    assert cli(capsys, "machine", "reset")[0] == 0
    assert snapshot(top) == before


@pytest.mark.parametrize("study", [("variants", "--source", "{src}", "--variant", "O2=-O2", "--", "{exe}"),
                                   ("profile", "--", "true"), ("instances", "--n", "1", "--", "true"),
                                   ("lab", "--quick", "--studies", "run")])
def test_variants_profile_instances_and_lab_take_tune_and_refuse_it_without_root(capsys, monkeypatch, tmp_path, study):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.chdir(tmp_path)  # the lab's default --out, ./perflab-lab, must not be left here
    (tmp_path / "t.c").write_text("int main(void) { return 0; }\n")
    name = study[0]
    args = [a.replace("{src}", str(tmp_path / "t.c")) for a in study[1:]]
    code, _, err = cli(capsys, name, "--tune", "--db", str(tmp_path / "s.db"), *args)
    assert code == 2 and err.strip().splitlines() == [
        f"perflab: error: perflab {name} --tune writes /proc/sys, /sys and cgroups: run it as root "
        f"(sudo perflab {name} --tune)"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.c"]  # no store, no output directory


def test_profile_of_a_pid_refuses_tune_in_one_line(capsys, tmp_path):
    code, _, err = cli(capsys, "profile", "--pid", str(os.getpid()), "--tune", "--db", str(tmp_path / "s.db"))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "a --pid process is not one of them" in err
