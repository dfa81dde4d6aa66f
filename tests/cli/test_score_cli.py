"""perflab import, perflab score --campaign/--compare/--export and perflab cost in score units, on
the public reports (tests/data/hepscore) through the real CLI and a SQLite store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from perflab.cli import cli, main

DATA = Path(__file__).parents[1] / "data" / "hepscore"
RESULT = str(DATA / "hepscore_result_expected_output.json")
SUITE = str(DATA / "ref_summary_output.json")


def _run(args, db):
    r = CliRunner(env={"COLUMNS": "250"}).invoke(cli, [*args, "--db", str(db)], catch_exceptions=False)
    return r


def test_import_stores_a_score_campaign_and_results_lists_it(tmp_path):
    db = tmp_path / "p.db"
    r = _run(["import", RESULT], db)
    assert r.exit_code == 0, r.output
    assert "score 872.266 (95% CI" in r.output and "campaign 1" in r.output
    r = _run(["import", SUITE, "--json", str(tmp_path / "s.json")], db)
    assert r.exit_code == 0, r.output
    assert "two speeds among 48 copies" in r.output and "mismatch: the file's score_per_core" in r.output
    assert json.loads((tmp_path / "s.json").read_text())["result"]["host"]["cpus"] == 48
    r = _run(["results"], db)
    assert r.exit_code == 0 and "score" in r.output
    r = _run(["score", "--campaign", "2"], db)
    assert r.exit_code == 0 and "olivb-21" not in r.output and "875.894" in r.output


def _fails(args, db, capsys) -> str:
    """The one line of a refused command (exit status 2, through perflab's own main)."""
    with pytest.raises(SystemExit) as exc:
        main([*args, "--db", str(db)])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1, err
    return err


def test_bad_file_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"hello": 1}))
    with pytest.raises(SystemExit) as exc:
        main(["import", str(bad), "--db", str(tmp_path / "p.db")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1 and "neither layout" in err
    assert not (tmp_path / "p.db").exists()  # nothing opened for a file that is not a report


def test_export_of_a_stored_campaign_reimports_to_the_same_figures(tmp_path):
    db = tmp_path / "p.db"
    assert _run(["import", RESULT], db).exit_code == 0
    out = tmp_path / "e.json"
    r = _run(["score", "--campaign", "1", "--export", "hep-suite", str(out)], db)
    assert r.exit_code == 0, r.output
    first = json.loads(out.read_text())
    r = _run(["import", str(out), "--json", str(tmp_path / "back.json")], db)
    assert r.exit_code == 0, r.output
    back = json.loads((tmp_path / "back.json").read_text())["result"]
    assert back["score"] == first["profiles"]["hepscore"]["score"] == 872.266
    assert back["score_ci"] == first["perflab"]["score_ci"]


def test_compare_two_scores_of_one_suite(tmp_path, capsys):
    db = tmp_path / "p.db"
    assert _run(["import", RESULT], db).exit_code == 0
    doc = json.loads(Path(RESULT).read_text())
    for bench in doc["benchmarks"].values():  # a host 10 % faster on every repetition
        for k, run in bench.items():
            if k.startswith("run") and k[3:].isdigit():
                run["report"]["wl-scores"] = {m: v * 1.1 for m, v in run["report"]["wl-scores"].items()}
    fast = tmp_path / "fast.json"
    fast.write_text(json.dumps(doc))
    assert _run(["import", str(fast)], db).exit_code == 0
    r = _run(["score", "--compare", "1", "2"], db)
    assert r.exit_code == 0, r.output
    assert "B's score differs from A's: 1.1" in r.output
    r = _run(["score", "--compare", "1", "1"], db)
    assert "no difference shown: B/A = 1.0000" in r.output
    assert _run(["import", SUITE], db).exit_code == 0
    assert "different suites" in _fails(["score", "--compare", "1", "3"], db, capsys)


def test_cost_plans_in_score_units_from_imported_reports(tmp_path, capsys):
    db = tmp_path / "p.db"
    assert _run(["import", RESULT], db).exit_code == 0
    assert _run(["import", SUITE], db).exit_code == 0
    toml = tmp_path / "p.toml"
    toml.write_text("""
[requirement]
target_score = 100000
score_unit = "HEPscore"
power_envelope_kw = 200

[[platform]]
name = "64-CPU host"
sockets = 2
tdp_w = 105
score_from_campaign = 1
prices = { board = 400, memory = 900, cpu = 1200 }

[[platform]]
name = "E5-2695 v2"
sockets = 2
tdp_w = 115
score_from_campaign = 2
prices = { board = 400, memory = 600, cpu = 1500 }
""")
    r = _run(["cost", str(toml)], db)
    assert r.exit_code == 0, r.output
    assert "100,000 HEPscore inside 200 kW" in r.output and "HEPscore/node" in r.output
    # 100000 / 872.266 -> 115 nodes; 100000 / 875.8939 -> 115 nodes
    assert "115" in r.output
    bad = tmp_path / "bad.toml"
    bad.write_text(toml.read_text().replace("score_from_campaign = 1", "throughput_per_node = 900"))
    assert "another unit" in _fails(["cost", str(bad)], db, capsys)


def test_compare_and_report_treat_score_campaigns_as_scores(tmp_path):
    db = tmp_path / "p.db"
    assert _run(["import", RESULT], db).exit_code == 0
    assert _run(["import", SUITE], db).exit_code == 0
    r = _run(["compare", "1", "1"], db)
    assert r.exit_code == 0 and "no difference shown: B/A = 1.0000" in r.output
    out = tmp_path / "r.md"
    r = _run(["report", "1", "2", "-o", str(out)], db)
    assert r.exit_code == 0, r.output
    text = out.read_text()
    assert "What is the machine's suite score" in text and "score 872.266 (95% CI" in text
    assert "two speeds among 48 copies" in text and "no interval" in text


def test_measuring_options_with_a_stored_campaign_are_refused(tmp_path, capsys):
    db = tmp_path / "p.db"
    assert _run(["import", RESULT], db).exit_code == 0
    assert "--reps applies to a suite being measured" in _fails(["score", "--campaign", "1", "--reps", "5"], db, capsys)
