"""`perflab results`: campaign list, one campaign's runs, JSON, and a missing campaign."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from perflab.model import RunResult
from perflab.store import open_store


def _perflab(*args: str) -> subprocess.CompletedProcess:
    # Wide enough that a verdict stays on one line: these tests read the listing's content; how
    # piped output wraps at 100 columns is tests/cli/test_pipe_width.py's.
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "perflab", *args], capture_output=True, text=True,
                          timeout=60, env=env)


def test_results_lists_and_groups(tmp_path):
    db = str(tmp_path / "r.db")
    with open_store(db) as s:
        cid = s.start_campaign("cores", {"cpus": [0, 1]})
        for cpu in (0, 1):
            for rep in range(3):
                r = RunResult(wall_ns=(cpu + 1) * 10_000_000 + rep * 100_000, user_s=0, sys_s=0,
                              maxrss_kb=1024, minflt=0, majflt=0, nvcsw=0, nivcsw=0, exit_code=0,
                              metrics={"events_per_s": 100.0 / (cpu + 1)})
                s.add_measurement(cid, r, {"cpu": cpu}, rep=rep, label="w")
        s.finish_campaign(cid, summary={"verdict": "cpu 1 is slower"})
        s.start_campaign("instances", {})
    out = _perflab("results", "--db", db)
    assert out.returncode == 0, out.stderr
    assert "cores" in out.stdout and "instances" in out.stdout and "cpu 1 is slower" in out.stdout
    out = _perflab("results", "--db", db, "--study", "instances")
    assert "cores" not in out.stdout
    out = _perflab("results", "--db", db, str(cid), "--json", "-")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    groups = {g["params"]["cpu"]: g for g in data["groups"]}
    assert groups[0]["wall_median_s"] == 0.0101 and groups[1]["wall_median_s"] == 0.0201
    assert groups[1]["metrics"] == {"events_per_s": 50.0} and groups[0]["n"] == 3
    assert "20.10 ms" in out.stderr  # the table went to stderr


def test_results_unknown_campaign(tmp_path):
    out = _perflab("results", "--db", str(tmp_path / "r.db"), "7")
    assert out.returncode == 2
    assert out.stderr.strip() == (f"perflab: error: no campaign 7 in results store {tmp_path / 'r.db'}; "
                                  "list them with 'perflab results'")


def test_listing_gives_instances_and_micro_their_verdict(tmp_path):
    # Their summaries keep figures, not a sentence: the listing says what the report says.
    from perflab.report.listing import campaign_row

    with open_store(str(tmp_path / "s.db")) as store:
        a = store.start_campaign("instances", {})
        store.finish_campaign(a, "done", {"unit": "events/s", "optimum_n": 4, "optimum_policy": "compact",
                                          "optimum_throughput": 91.84,
                                          "scans": [{"optimum_throughput": 91.84, "within_1pct_n": 3}]})
        # as MicroResult stores an AbiDiff (the listing reads it through MicroResult.from_dict)
        diffs = [{"bench": f"op{i}", "abi": "m32", "base": "m64", "pct": 10.0 + i, "p_value": 0.001,
                  "ci_pct": {"low": 5.0 + i, "high": 15.0 + i, "level": 0.95}, "significant": i < 8}
                 for i in range(9)]
        b = store.start_campaign("micro", {})
        store.finish_campaign(b, "done", {"abis": ["m64", "m32"], "diffs": diffs, "cells": []})
        rows = {c.study: campaign_row(c) for c in store.campaigns()}
    assert rows["instances"]["verdict"] == ("Most throughput: 91.84 events/s with 4 copies (policy compact); "
                                            "3 copies already give 99 % of it.")
    assert rows["micro"]["verdict"].startswith("8 of 9 operations differ significantly between ABIs: op0 m32 +10 %")
    assert rows["micro"]["verdict"].endswith("op5 m32 +15 %; and 2 more.")


def test_the_listing_shows_the_newest_campaigns_and_says_how_many_it_leaves_out(tmp_path):
    # A store a CI gate or a fleet fills holds thousands of campaigns: the listing reads and shows
    # the newest N (default 50), oldest of them first, and says how to see the rest.
    from perflab.cli.results import LAST

    db = str(tmp_path / "r.db")
    with open_store(db) as s:
        ids = [s.start_campaign("run" if i % 2 else "cores", {}) for i in range(LAST + 3)]
    out = _perflab("results", "--db", db)
    assert out.returncode == 0, out.stderr
    assert f"the newest {LAST} of {LAST + 3} campaigns; 3 older ones are not shown" in out.stdout
    shown = json.loads(_perflab("results", "--db", db, "--json", "-").stdout)
    assert [r["id"] for r in shown] == ids[3:]
    two = json.loads(_perflab("results", "--db", db, "-n", "2", "--json", "-").stdout)
    assert [r["id"] for r in two] == ids[-2:]
    cores = [i for i in ids if (i - ids[0]) % 2 == 0]
    one = _perflab("results", "--db", db, "--study", "cores", "--last", "1")
    assert f"the newest 1 of {len(cores)} campaigns" in one.stdout and f"│ {cores[-1]} │" in one.stdout
    every = _perflab("results", "--db", db, "--last", "0")
    assert "not shown" not in every.stdout and all(f"│ {i:>2} │" in every.stdout for i in ids)
    exact = _perflab("results", "--db", db, "--study", "run", "--last", str(len(ids) - len(cores)))
    assert "not shown" not in exact.stdout


def test_the_listing_shows_a_verdicts_first_clause_never_cut_mid_word():
    from perflab.report.terminal.results import short as _short

    v = "sleep 0.05: median 0.0527 s (98% CI 0.0513..0.0559 s, 10 runs); against it: nothing"
    assert _short(v) == "sleep 0.05: median 0.0527 s (98% CI 0.0513..0.0559 s, 10 runs) [more]"
    assert _short("short verdict.") == "short verdict."
    long = "word " * 40
    cut = _short(long)
    assert cut.endswith(" [more]") and all(w == "word" for w in cut[:-7].split())
