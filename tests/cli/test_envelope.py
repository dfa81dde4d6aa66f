"""The versioned envelope around a study's result: stored with the campaign, written by --json;
a summary stored without it (as perflab 0.1.0 kept it) still reads and renders the same."""

from __future__ import annotations

import json
import sqlite3

from click.testing import CliRunner

from perflab import __version__
from perflab.cli import cli
from perflab.store import envelope, open_store


def _run(tmp_path, *args: str):
    r = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert r.exit_code == 0, r.output
    # the report's "Generated <minute>" line moves with the clock, not with the summary
    return "\n".join(line for line in r.output.splitlines() if not line.startswith("Generated "))


def test_run_json_and_the_stored_summary_carry_the_envelope(tmp_path):
    db, js = str(tmp_path / "p.db"), tmp_path / "r.json"
    _run(tmp_path, "run", "--runs", "3", "--db", db, "--json", str(js), "--", "true")
    out = json.loads(js.read_text())
    assert {k: out[k] for k in ("perflab", "schema", "study")} == {
        "perflab": __version__, "schema": envelope.SCHEMA, "study": "run"}
    assert out["result"]["benchmarks"][0]["command"] == "true" and out["result"]["verdict"]
    with sqlite3.connect(db) as conn:
        (raw,) = conn.execute("SELECT summary FROM campaigns").fetchone()
    stored = json.loads(raw)
    assert set(stored) == envelope.KEYS and stored["study"] == "run"
    with open_store(db) as store:
        # the store hands back the result, as --json writes it inside the envelope
        assert store.campaign(1).summary["verdict"] == out["result"]["verdict"]


def test_the_full_store_writes_the_envelope_and_reads_the_result(tmp_path):
    """Store (SQLAlchemy) as well as the LiteStore `perflab run` writes through."""
    db = str(tmp_path / "s.db")
    with open_store(db) as store:
        cid = store.start_campaign("cost", {})
        store.finish_campaign(cid, "done", summary={"best": "a", "verdict": "best: a"})
        assert store.campaign(cid).summary == {"best": "a", "verdict": "best: a"}
    with sqlite3.connect(db) as conn:
        (raw,) = conn.execute("SELECT summary FROM campaigns WHERE id = ?", (cid,)).fetchone()
    assert json.loads(raw) == envelope.wrap("cost", {"best": "a", "verdict": "best: a"})


def test_a_summary_stored_without_the_envelope_reads_and_renders_the_same(tmp_path):
    db = str(tmp_path / "p.db")
    _run(tmp_path, "run", "--runs", "3", "--db", db, "--", "true")
    new_md = _run(tmp_path, "report", "1", "--db", db, "--format", "markdown", "-o", "-")
    new_results = _run(tmp_path, "results", "1", "--db", db)
    with sqlite3.connect(db) as conn:
        (raw,) = conn.execute("SELECT summary FROM campaigns WHERE id = 1").fetchone()
        old = json.loads(raw)["result"]  # the form perflab 0.1.0 stored: the result alone
        conn.execute("UPDATE campaigns SET summary = ? WHERE id = 1", (json.dumps(old),))
    with open_store(db) as store:
        assert store.campaign(1).summary == old
    assert _run(tmp_path, "report", "1", "--db", db, "--format", "markdown", "-o", "-") == new_md
    assert _run(tmp_path, "results", "1", "--db", db) == new_results
    assert "verdict: true: median" in new_results  # the stored verdict shown, from either form


def test_unwrap_leaves_a_result_that_only_looks_like_an_envelope():
    """Only the four keys with an integer schema make an envelope: a result with a 'result' key is
    no envelope."""
    assert envelope.unwrap({"result": 1, "study": "x"}) == {"result": 1, "study": "x"}
    assert envelope.unwrap(None) is None
    wrapped = envelope.wrap("cores", {"cpus": []})
    assert envelope.unwrap(wrapped) == {"cpus": []} and envelope.wrap("cores", wrapped) == wrapped
