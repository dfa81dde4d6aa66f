"""perflab score end to end on real processes (a shell workload that does fixed work), the suite
file's errors, the config's round trip for resume, and the modelled power."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from perflab.cli import cli, main
from perflab.errors import PerflabError
from perflab.store import open_store
from perflab.studies.score import study
from perflab.studies.score.suite import load_suite

TOML = r"""
[workload.tick]
command = "i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; echo events: 5; echo events/s: 1"
shell = true
metrics = ['events: (?P<events>\d+)', 'events/s: (?P<events_per_s>[\d.]+)']
primary_metric = "events_per_s"
higher_is_better = true

[suite.t]
reference_machine = "this test's own numbers"
scaling = 10
repetitions = 3
copies = 2
tdp_w = 50

[[suite.t.workload]]
name = "tick"
as = "a"
reference = 100.0

[[suite.t.workload]]
name = "tick"
as = "b"
args = ["x"]
reference = 50.0
weight = 2
"""


def test_score_runs_a_suite_on_real_processes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "perflab.toml").write_text(TOML)
    db = tmp_path / "p.db"
    r = CliRunner(env={"COLUMNS": "250"}).invoke(
        cli, ["score", "--suite", "t", "--db", str(db), "--json", str(tmp_path / "s.json"),
              "--export", "hep-suite", str(tmp_path / "e.json")], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    assert "score " in r.output and "95% CI" in r.output and "modelled: 1.6 x TDP 50 W" in r.output
    res = json.loads((tmp_path / "s.json").read_text())["result"]
    assert [w["name"] for w in res["workloads"]] == ["a", "b"]
    assert all(len(w["values"]) == 3 and w["copies"] == 2 for w in res["workloads"])
    assert res["score_ci"][0] < res["score"] < res["score_ci"][1]
    assert res["watts"] == pytest.approx(1.6 * 50 * res["host"]["sockets"])
    with open_store(str(db)) as store:
        assert len(store.measurements(res["campaign_id"])) == 2 * 3 * 2  # every copy stored
        camp = store.campaign(res["campaign_id"])
    cfg = study.ScoreConfig.from_dict(json.loads(json.dumps(camp.config)))
    assert cfg.suite.name == "t" and cfg.workloads[1].name.startswith("tick") and cfg.suite.workloads[1].weight == 2
    exported = json.loads((tmp_path / "e.json").read_text())
    assert exported["profiles"]["hepscore"]["score"] == res["score"]
    assert set(exported["profiles"]["hepscore"]["wl-scores"]["a"]) == {"events_per_s", "events_per_s_ref"}


@pytest.mark.parametrize("edit, words", [
    ('reference = 100.0', "reference must be a number > 0"),
    ('copies = 2', "copies must be"),
    ('reference_machine = "this test\'s own numbers"', "name the machine"),
    ('as = "b"', "two workloads share a name"),
])
def test_bad_suites_are_one_line(tmp_path, edit, words):
    bad = {'reference = 100.0': 'reference = -1', 'copies = 2': 'copies = "all"',
           'reference_machine = "this test\'s own numbers"': '', 'as = "b"': 'as = "a"'}[edit]
    path = tmp_path / "perflab.toml"
    path.write_text(TOML.replace(edit, bad, 1))
    with pytest.raises(PerflabError) as exc:
        load_suite("t", str(path))
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_unknown_suite_names_the_known_ones(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["score", "--suite", "nope", "--db", str(tmp_path / "p.db")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "known suites are minihlt" in err and err.count("\n") == 1


def test_the_builtin_suite_names_its_reference_machine():
    s = load_suite("minihlt", None)
    assert s.source == "builtin" and "VM" in s.reference_machine
    assert [w.name for w in s.workloads] == ["hlt-core", "hlt-quick", "hlt-memory"]
    assert all(w.reference > 0 for w in s.workloads)


def test_measured_energy_gives_score_per_watt_labelled_with_its_source():
    from perflab.model import RunResult
    from perflab.studies.score.suite import Suite, SuiteWorkload
    from perflab.model import MetricPattern, Workload

    wl = Workload(name="w", argv=("w",), metrics=(MetricPattern(r"events: (?P<events>\d+)"),
                                                   MetricPattern(r"events/s: (?P<events_per_s>[\d.]+)")),
                  primary_metric="events_per_s", higher_is_better=True)
    suite = Suite("e", (SuiteWorkload("w", "w", 20.0),), "ref", 100.0, 3, 2, tdp_w=80)
    cfg = study.ScoreConfig(suite=suite, workloads=(wl,))
    runs = []
    for rep in range(3):
        for c in range(2):
            # 2 copies x 10 events in 1 s: 20 events/s; the batch's 150 J stored with its first copy
            r = RunResult(wall_ns=10**9, user_s=1, sys_s=0, maxrss_kb=0, minflt=0, majflt=0, nvcsw=0, nivcsw=0,
                          exit_code=0, start_ns=rep * 10**10, end_ns=rep * 10**10 + 10**9,
                          metrics={"events": 10, "events_per_s": 10.0},
                          energy={"ipmi:node": 150.0} if c == 0 else {})
            runs.append(study.Run({"workload": "w", "copy": c, "round": rep}, r))
    res = study.analyse(cfg, runs, {"sockets": 2}, 2)
    assert res.score == 100.0 and res.watts == 150.0 and res.score_per_watt == pytest.approx(100 / 150)
    assert res.watts_source.startswith("measured: node meter")
    res = study.analyse(cfg, [study.Run(r.params, RunResult(**{**r.result.__dict__, "energy": {}})) for r in runs],
                        {"sockets": 2}, 2)
    assert res.watts == 1.6 * 80 * 2 and res.watts_source.startswith("modelled")


def test_resume_replays_the_stored_copies(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "perflab.toml").write_text(TOML)
    db = tmp_path / "p.db"
    runner = CliRunner(env={"COLUMNS": "250"})
    r = runner.invoke(cli, ["score", "--suite", "t", "--db", str(db), "--json", "a.json"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    first = json.loads((tmp_path / "a.json").read_text())["result"]
    with open_store(str(db)) as store:
        store.finish_campaign(first["campaign_id"], "interrupted", summary=None)
    r = runner.invoke(cli, ["resume", str(first["campaign_id"]), "--db", str(db)], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    with open_store(str(db)) as store:
        camp = store.campaign(first["campaign_id"])
        assert camp.status == "done" and len(store.measurements(camp.id)) == 12  # nothing ran twice
    assert camp.summary["score"] == first["score"] and camp.summary["score_ci"] == first["score_ci"]
