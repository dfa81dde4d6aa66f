#!/usr/bin/env python3
"""Does `perflab fleet report` find a node at 70 % of its twins' speed, and stay quiet without it?

Starts two private 4-node clusters with scripts/slurm-local (node1..node4, one platform): one
with node2 slowed (`--slow node2=0.7`: its cgroup frozen 30 ms of every 100 ms, so it does 70 %
of a twin's work in any stretch of time, whatever else loads the machine), one without. Each
repetition submits the same `run` study (a CPU-bound shell loop) with `fleet submit --nodes 4`
and reads `fleet report --json`: found when its slow hosts are exactly [node2], a false alarm
when the plant-free cluster names any. It checks that each repetition measured the 4 nodes, each
once, and prints node2's median against the other three's.

Each task runs the loop for a fixed time (`run --max-time`), so the nodes of a repetition stop
together; with a fixed count the slow node would end its campaign alone, on a machine its twins
had left, and faster. Two ways to run the nodes:
- at once (the default): 20 s a node, the four tasks sharing this 2-CPU machine;
- --max-parallel 1: one node at a time, 8 s each; the nodes then run in different minutes of
  the machine, and the report says so (the bench counts the repetitions whose report carried
  that note).
Goal: found in >= 9 of 10, quiet in >= 9 of 10.
Usage: bench/farm_slow_node.py [REPS] [--max-parallel 1]   (default 10; needs root, Slurm and a
writable cgroup)
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "slurm-local"
LOOP = "i=0; while [ $i -lt 50000 ]; do i=$((i+1)); done"  # ~0.1 s at a full CPU


def perflab(args: list[str], env: dict) -> str:
    # In the cluster's directory: fleet submit writes its logs under ./perflab-fleet.
    cwd = Path(env["SLURM_CONF"]).parent
    p = subprocess.run([sys.executable, "-m", "perflab", *args], env=env, capture_output=True, text=True,
                       timeout=600, cwd=cwd)
    if p.returncode != 0:
        raise SystemExit(f"perflab {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
    return p.stdout


def wait_idle(env: dict, limit: float = 600) -> None:
    deadline = time.monotonic() + limit
    while subprocess.run(["squeue", "-h"], env=env, capture_output=True, text=True).stdout.strip():
        if time.monotonic() > deadline:
            raise SystemExit("jobs still queued after 600 s")
        time.sleep(0.5)


def start(d: Path, slow: bool) -> str:
    args = [str(SCRIPT), "start", str(d), "--nodes", "4"] + (["--slow", "node2=0.7"] if slow else [])
    out = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise SystemExit(out.stdout + out.stderr)
    return out.stdout.strip().splitlines()[-1].split("=", 1)[1]


def main() -> int:
    args = sys.argv[1:]
    one = "--max-parallel" in args
    if one:
        i = args.index("--max-parallel")
        if args[i + 1:i + 2] != ["1"]:
            raise SystemExit("usage: bench/farm_slow_node.py [REPS] [--max-parallel 1]")
        del args[i:i + 2]
    reps = int(args[0]) if args else 10
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the clusters on the way out
    # Each task measures for a fixed time, not a fixed count: the nodes of one repetition then
    # stop together, and the slow one does not end its campaign alone on a machine its twins left.
    seconds = "8" if one else "20"
    throttle = ["--max-parallel", "1"] if one else []
    tmp = Path(tempfile.mkdtemp(prefix="perflab-farm-bench-"))
    counts = {True: 0, False: 0}
    noted = 0
    t0 = time.monotonic()
    for slow in (True, False):
        d = tmp / ("slow" if slow else "null")
        conf = start(d, slow)
        env = {**os.environ, "SLURM_CONF": conf, "PYTHONPATH": str(ROOT / "src"),
               "PERFLAB_CACHE": str(tmp / "cache")}
        env.pop("PERFLAB_DB", None)
        db = str(d / "fleet.db")
        try:
            for i in range(reps):
                name = f"{d.name}{i}"
                t1 = time.monotonic()
                perflab(["fleet", "submit", name, "--nodes", "4", *throttle, "--db", db, "--",
                         "run", "--max-runs", "10000", "--min-runs", "2", "--max-time", seconds, "--command-name", "loop",
                         "--", "sh", "-c", LOOP], env)
                wait_idle(env)
                rep = json.loads(perflab(["fleet", "report", name, "--db", db, "--json", "-"], env))
                hosts = sorted(h["host"] for h in rep["hosts"] if h["status"] == "done")
                if hosts != ["node1", "node2", "node3", "node4"]:
                    raise SystemExit(f"{name}: measured hosts {hosts}, not node1..node4 once each")
                apart = any(not p.get("same_time", True) for p in rep["platforms"])
                noted += apart
                named = sorted(h["host"] for h in rep["slow_hosts"])
                med = {h["host"]: h["headline"]["median"] for h in rep["hosts"]}
                ratio = med["node2"] / statistics.median(v for k, v in med.items() if k != "node2")
                hit = named == ["node2"] if slow else bool(named)
                counts[slow] += hit
                print(f"{'planted' if slow else 'null'} {i + 1}: slow hosts {named or 'none'}"
                      + f"; node2 at {ratio:.2f} of the others' median"
                      + ("; report: not measured at the same time" if apart else "")
                      + f"; {time.monotonic() - t1:.0f} s", flush=True)
        finally:
            subprocess.run([str(SCRIPT), "stop", str(d)], capture_output=True, timeout=60)
    how = "one node at a time (--max-parallel 1)" if one else "all four at once"
    print(f"farm-slow-node, {how}: found {counts[True]} of {reps} (node2 running 70 % of the time, alone), "
          f"false alarms {counts[False]} of {reps} (no plant); "
          f"reports noting disjoint windows {noted} of {2 * reps}; {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
