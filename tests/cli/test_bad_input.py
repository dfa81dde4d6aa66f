"""A table of bad inputs across every subcommand: each gets one line, exit status 2, no traceback,
and the results store keeps everything it held (PRAGMA integrity_check, same rows)."""

from __future__ import annotations

import gzip
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path


from perflab.model import RunResult
from perflab.store import open_store

T = ["--", "true"]  # a target that runs (never reached: the bad input is refused first)

BAD: list[tuple[str, ...]] = [
    # top level
    ("nosuch",), ("--nosuch",), ("cores", "--nosuch", *T),
]
# every command that takes a workload
for cmd in ("cores", "instances", "variants", "profile", "run", "footprint", "bundle"):
    extra = ("-o", "{tmp}/b.tgz") if cmd == "bundle" else ()
    BAD += [
        (cmd, *extra, "-w", "nosuch"),
        (cmd, *extra, "--config", "{tmp}/missing.toml", "-w", "x"),
        (cmd, *extra, "--config", "{tmp}/binary.toml", "-w", "x"),
        (cmd, *extra, "--config", "{tmp}/syntax.toml", "-w", "x"),
        (cmd, *extra, "--config", "{tmp}/nan.toml", "-w", "x"),
        (cmd, *extra, "--", "{tmp}/missing-prog"),
        (cmd, *extra, "--db", "/proc/perflab.db", *T),
        (cmd, *extra, "--db", "/", *T),
        (cmd, *extra, "--db", "mysql://h/x", *T),
        (cmd, *extra, "--db", "{tmp}/nodir/s.db", *T),
        (cmd, *extra, "--timeout", "nan", *T),
        (cmd, *extra, "--timeout", "-1", *T),
        (cmd, *extra, "--timeout", "inf", *T),
    ]
    if cmd not in ("bundle",):
        BAD.append((cmd, *extra, "--json", "/proc/x.json", *T))
    if cmd not in ("footprint", "bundle", "variants"):
        BAD.append((cmd, *extra))  # nothing to run
BAD += [
    # cores
    ("cores", "--cpus", "999", *T), ("cores", "--cpus", "0-99999999999", *T), ("cores", "--cpus", "x", *T),
    ("cores", "--rounds", "0", *T), ("cores", "--rounds", "-1", *T), ("cores", "--rounds", "nan", *T),
    ("cores", "--max-time", "0", *T), ("cores", "--precision", "-0.1", *T), ("cores", "--precision", "nan", *T),
    ("cores", "--min-effect", "-1", *T), ("cores", "--alpha", "2", *T), ("cores", "--alpha", "0", *T),
    ("cores", "--alpha", "nan", *T), ("cores", "--seed", "x", *T), ("cores", "--rounds", "99999999999999", *T),
    ("cores", "--blocks", "0", *T), ("cores", "--blocks", "x", *T), ("cores", "--span", "-1", *T),
    ("cores", "--span", "nan", *T),
    # instances
    ("instances", "--n", "0", *T), ("instances", "--n", "x", *T), ("instances", "--n", "1-9999999999", *T),
    ("instances", "--max", "0", *T), ("instances", "--max", "nan", *T), ("instances", "--reps", "0", *T),
    ("instances", "--reps", "-3", *T), ("instances", "--policy", "nosuch", *T),
    ("instances", "--plan", "--root", "{tmp}/missing-root", *T), ("instances", "--seed", "x", *T),
    ("instances", "--plan", "--root", "{tmp}/badroot", *T),
    # variants
    ("variants", "-V", "noequals", *T), ("variants", "--matrix", "bad", *T),
    ("variants", "-w", "minihlt", "--baseline", "nosuch"), ("variants", "-w", "minihlt", "-r", "0"),
    ("variants", "-w", "minihlt", "--warmup", "-1"), ("variants", "-w", "minihlt", "--events", "0"),
    ("variants", "-w", "minihlt", "--static-mb", "-5"), ("variants", "--source", "{tmp}/missing.c", *T),
    ("variants", "-w", "minihlt", "--seed", "x"),
    # profile
    ("profile", "--event", "-1", *T), ("profile", "--start", "(", "--stop", "x", *T),
    ("profile", "--freq", "0", *T), ("profile", "--freq", "nan", *T), ("profile", "--repeat", "0", *T),
    ("profile", "--threshold", "200", *T), ("profile", "--cpu", "999", *T),
    ("profile", "--log", "{tmp}/missing-dir/log", "--start", "a", "--stop", "b", *T),
    ("profile", "--after", "nan", *T), ("profile", "--duration", "-1", *T),
    ("profile", "--call-graph", "nosuch", *T), ("profile", "--event", "1", "--start", "a", *T),
    ("profile", "--tree", *T), ("profile", "--export", "folded", "{tmp}/f.txt", *T),
    ("profile", "--call-graph", "fp", "--export", "svg", "{tmp}/f.svg", *T),
    ("profile", "--call-graph", "fp", "--export", "folded", "{tmp}/nodir/f.txt", *T),
    ("profile", "--call-graph", "fp", "--tree", "--prune", "nan", *T),
    ("profile", "--instrument", "callgrind", "--tree", "--prune", "100", *T),
    # frontend
    ("frontend", "--min-size", "12parsec"), ("frontend", "--max-size", "0"),
    ("frontend", "--min-size", "4M", "--max-size", "16K"), ("frontend", "--points-per-octave", "0"),
    ("frontend", "--iters", "0"), ("frontend", "--reps", "0"), ("frontend", "--modes", "8k"),
    ("frontend", "--block-bytes", "0"), ("frontend", "--per-cpu", "999"), ("frontend", "--kind", "nosuch"),
    ("frontend", "--seed", "nan"), ("frontend", "--db", "/proc/x.db"), ("frontend", "--json", "/proc/x.json"),
    # micro
    ("micro", "--bench", "nosuch"), ("micro", "--abi", "nosuch"), ("micro", "--reps", "0"),
    ("micro", "--scale", "nan"), ("micro", "--scale", "-1"), ("micro", "--io-dir", "{tmp}/missing-io"),
    ("micro", "--shm-total", "12parsec"), ("micro", "--shm", "maybe"), ("micro", "--db", "/proc/x.db"),
    ("micro", "--json", "/proc/x.json"), ("micro", "--scale", "inf"),
    # run
    ("run", "-r", "0", *T), ("run", "--runs", "-1", *T), ("run", "--precision", "-5%", *T),
    ("run", "--precision", "nan", *T), ("run", "--min-runs", "0", *T), ("run", "--max-runs", "0", *T),
    ("run", "--min-runs", "5", "--max-runs", "2", *T), ("run", "--max-time", "nan", *T),
    ("run", "--warmup", "-1", *T), ("run", "-P", "x", "1", *T), ("run", "-P", "x", "5", "1", "true {x}"),
    ("run", "-P", "x", "1", "5", "-D", "0", "true {x}"), ("run", "--metric", "(", *T),
    ("run", "--metric", "x", *T), ("run", "--cpus", "999", *T), ("run", "--timeout", "0", *T),
    ("run", "--export-json", "/proc/x.json", *T), ("run", "--export-csv", "{tmp}/nodir/x.csv", *T),
    ("run", "--export-markdown", "/proc/x.md", *T), ("run", "-n", "a", "-n", "b", *T),
    ("run", "-r", "nan", *T), ("run", "--runs", "99999999999999999", *T),
    # lab
    ("lab", "--studies", "nosuch"), ("lab", "--out", "/proc/x"), ("lab", "--seed", "x"),
    ("lab", "-w", "nosuch"), ("lab", "--db", "/proc/x.db"), ("lab", "-w", "{tmp}/binary.toml"),
    # compare
    ("compare", "1", "999"), ("compare", "0", "1"), ("compare", "x", "y"), ("compare", "1", "1", "--alpha", "2"),
    ("compare", "1", "1", "--format", "nosuch"), ("compare", "1", "1", "--json", "/proc/x"), ("compare", "1"),
    # results, report, resume
    ("results", "999"), ("results", "x"), ("results", "--db", "/proc/x.db"), ("results", "--json", "/proc/x"),
    ("report", "999"), ("report", "-o", "/proc/x.html"), ("report", "--format", "pdf"), ("report", "x"),
    ("resume", "999"), ("resume", "x"), ("resume", "1"),
    # cost
    ("cost", "{tmp}/missing-cost.toml"), ("cost", "{tmp}/binary.toml"), ("cost", "{tmp}/syntax.toml"),
    ("cost", "{tmp}/cost-noreq.toml"), ("cost", "{tmp}/cost-negative.toml"), ("cost", "{tmp}/cost-nan.toml"),
    ("cost", "{tmp}/cost-campaign.toml"), ("cost", "{tmp}/cost-power-str.toml"),
    ("cost", "{tmp}/cost.toml", "--target", "nan"), ("cost", "{tmp}/cost.toml", "--envelope", "-1"),
    ("cost", "{tmp}/cost.toml", "--plot", "/proc/x.svg"), ("cost", "{tmp}/cost.toml", "--target", "inf"),
    # machine, workload
    ("machine", "--root", "{tmp}/missing-root"), ("machine", "--root", "{tmp}/badroot"),
    ("workload", "build", "nosuch"), ("workload", "path", "nosuch"), ("workload", "list", "--config", "{tmp}/binary.toml"),
    ("workload", "list", "--config", "{tmp}/syntax.toml"),
    # bundle, footprint
    ("bundle", "-o", "/proc/x.tgz", *T), ("bundle", "-o", "{tmp}/b.tgz", "--budget", "12parsec", *T),
    ("bundle", "-o", "{tmp}/b.tgz", "--budget", "0", *T), ("bundle", "verify", "{tmp}/missing.tgz"),
    ("bundle", "verify", "{tmp}/truncated.tgz"), ("bundle", "verify", "{tmp}/binary.toml"),
    ("bundle", "-o", "{tmp}/b.tgz", "--include", "{tmp}/missing-include", *T), ("bundle", "-o", "{tmp}/", *T),
    ("bundle", "-o", "{tmp}/b.tgz", "--cpu", "999", *T),
    ("cores", "--baseline-save", "bad name!", *T), ("variants", "-w", "minihlt", "--baseline-save", ""),
    ("frontend", "--baseline-save", "a b"), ("profile", "--baseline-save", ";", *T),
    ("footprint", "--cpu", "999", *T), ("footprint", "--reps", "0", *T), ("footprint", "--trace", "/proc/x", *T),
    # held out: a scan to inf or nan, a window whose start never matches, a denormal rate
    ("run", "-P", "x", "1", "inf", "true {x}"), ("run", "-P", "x", "1", "nan", "true {x}"),
    ("run", "-P", "x", "nan", "3", "true {x}"), ("run", "-P", "x", "1", "3", "-D", "inf", "true {x}"),
    ("profile", "--start", "NEVER-PRINTED", "--", "echo", "hello"), ("cost", "{tmp}/cost-denormal.toml"),
    ("profile", "diff", "1", "1", "--min-effect", "nan"), ("profile", "diff", "1", "1", "--min-effect", "-3"),
    ("compare", "1,2", "1"), ("compare", "1,x", "1,2"),
    # fleet visits: a count of rounds, never with stand-in array tasks
    ("fleet", "submit", "v", "--nodes", "2", "--visits", "0", "--", "run", *T),
    ("fleet", "submit", "v", "--nodes", "2", "--visits", "x", "--", "run", *T),
    ("fleet", "submit", "v", "--nodes", "2", "--visits", "2", "--host-label", "h", "--", "run", *T),
]


def _prepare(tmp: Path) -> str:
    (tmp / "binary.toml").write_bytes(b"\x80\x81\xfe\xff\x00binary")
    (tmp / "syntax.toml").write_text("[workload.x\ncommand = \n")
    (tmp / "nan.toml").write_text("[workload.x]\ncommand = [\"true\"]\nhigher_is_better = nan\n")
    cost = ("[requirement]\ntarget_events_per_s = 100\npower_envelope_kw = 10\n"
            "[[platform]]\nname = \"a\"\nsockets = 1\ntdp_w = 100\nprices = { board = 1 }\n")
    (tmp / "cost.toml").write_text(cost + "throughput_per_node = 10\n")
    (tmp / "cost-noreq.toml").write_text("[[platform]]\nname = \"a\"\n")
    (tmp / "cost-negative.toml").write_text(cost + "throughput_per_node = -10\n")
    (tmp / "cost-nan.toml").write_text(cost + "throughput_per_node = nan\n")
    (tmp / "cost-denormal.toml").write_text(cost + "throughput_per_node = 5e-324\n")
    (tmp / "cost-campaign.toml").write_text(cost + "throughput_from_campaign = 999\n")
    (tmp / "cost-power-str.toml").write_text(cost + "throughput_per_node = 10\npower_from_campaign = \"x\"\n")
    with gzip.open(tmp / "full.tgz", "wb") as f:
        f.write(os.urandom(4096))
    (tmp / "truncated.tgz").write_bytes((tmp / "full.tgz").read_bytes()[:100])
    bad = tmp / "badroot" / "sys/devices/system/cpu"
    bad.mkdir(parents=True)
    (bad / "online").write_text("0-x\n")
    db = str(tmp / "s.db")
    with open_store(db) as store:
        cid = store.start_campaign("run", {"argv": ["true"]})
        for i in range(3):
            store.add_measurement(cid, RunResult(wall_ns=1000 + i, user_s=0, sys_s=0, maxrss_kb=1, minflt=0,
                                                 majflt=0, nvcsw=0, nivcsw=0, exit_code=0), {"i": i}, rep=i, label="t")
        store.finish_campaign(cid, "done", {"ok": True})
    return db


def _run(args: tuple[str, ...], tmp: Path, db: str) -> tuple[tuple[str, ...], int, str]:
    argv = [a.replace("{tmp}", str(tmp)) for a in args]
    env = {**os.environ, "PERFLAB_DB": db, "COLUMNS": "200"}
    try:
        p = subprocess.run([sys.executable, "-m", "perflab", *argv], capture_output=True, text=True,
                           timeout=90, cwd=tmp, env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return args, -1, "HANG (no answer in 90 s)"
    return args, p.returncode, p.stderr


def test_at_least_150_bad_inputs():
    assert len(BAD) >= 150


def test_every_bad_input_is_one_line_exit_2_and_loses_nothing(tmp_path):
    db = _prepare(tmp_path)
    # Each command line in its own process forked from one that imported perflab once
    # (tests/forkcli.py): the real entry point and exit status, without 260 interpreter starts.
    job = {"cases": [[a.replace("{tmp}", str(tmp_path)) for a in args] for args in BAD],
           "cwd": str(tmp_path), "env": {"PERFLAB_DB": db, "COLUMNS": "200"}, "timeout": 90}
    p = subprocess.run([sys.executable, str(Path(__file__).parents[1] / "forkcli.py")], input=json.dumps(job),
                       capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, p.stderr
    outcomes = [(args, rc, err) for args, (rc, err) in zip(BAD, json.loads(p.stdout))]
    assert len(outcomes) == len(BAD)
    wrong = []
    for args, rc, err in outcomes:
        lines = [line for line in err.splitlines() if line.strip()]
        if rc != 2 or len(lines) != 1 or "Traceback" in err or not lines[0].startswith("perflab: error: "):
            wrong.append(f"perflab {' '.join(args)}: exit {rc}, stderr {err.strip()[-300:]!r}")
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert conn.execute("SELECT count(*) FROM measurements WHERE campaign_id = 1").fetchone()[0] == 3
    conn.close()
    assert not wrong, f"{len(wrong)} of {len(BAD)} bad inputs mishandled:\n" + "\n".join(wrong)
