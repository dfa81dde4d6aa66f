#!/usr/bin/env python3
"""Does `perflab fleet report` find a node at 70 % of its twins' speed, and stay quiet without it?

Starts a private 4-node cluster with scripts/slurm-local (node1..node4, one platform) and submits,
repetition after repetition, the same `run` study (a CPU-bound shell loop) with `fleet submit
--nodes 4`, alternately planted and plant-free. In a planted repetition node2 is a node at 70 %
of its twins' speed: its loop does 1/0.7 of the work (the command reads SLURMD_NODENAME), so
each of its runs costs it 1/0.7 of a twin's whatever else loads the machine. A CPU limit on
node2's cgroup does not: on this 2-vCPU VM shared with other work, a quota of 0.7 of a CPU binds
only where the node would get more than that (it held node2 back in 0 of 116-267 periods at a
load of 9-13), and a node frozen 30 % of the time gets most of that time back from the scheduler
when the CPUs are contended (node2 at 0.87-0.99 of its twins' median). Each repetition reads
`fleet report --json`: found when its slow hosts are exactly [node2], a false alarm when a
plant-free repetition names any; it checks that each measured the 4 nodes, each once, and
prints node2's median against the other three's.

Two ways to run the nodes:
- at once (the default): 60 runs a node, the four tasks sharing this 2-CPU machine. The report
  compares runs of the same time (the window the nodes ran in together, in time blocks), so the
  slow node's runs after its twins had ended (alone on the machine, faster), and a node whose
  whole job ran before Slurm had started the others', are left out of the comparison; with 30
  runs that window is ~10 s, about as long as one node's share of the CPUs may hold, and the
  report's standard error then carries its peers' spread more than their blocks' noise (see
  docs/fleet.md);
- --max-parallel 1: one node at a time, 12 runs a visit; the nodes then run in different minutes
  of the machine. With the default 3 visits a node (fleet submit's default where fewer nodes run
  at once than there are; --visits V to change it) the report judges them in rounds, each node
  against its peers in each round; with --visits 1 it judges each node's level against its
  peers' levels, measured apart, and says what that costs.
Goal: found in >= 9 of 10, quiet in >= 9 of 10.
Usage: bench/farm_slow_node.py [REPS] [--max-parallel 1] [--visits V] [--runs N]   (default 10
repetitions, 60 runs a node at once, 12 a visit one at a time; needs root and Slurm)
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
# ~0.1 s at a full CPU; in a planted repetition node2 counts to 50000 / 0.7.
LOOP = 'n=50000; [ "$SLURMD_NODENAME" != "{slow}" ] || n=71429; i=0; while [ $i -lt $n ]; do i=$((i+1)); done'


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


def start(d: Path) -> str:
    out = subprocess.run([str(SCRIPT), "start", str(d), "--nodes", "4"], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise SystemExit(out.stdout + out.stderr)
    return out.stdout.strip().splitlines()[-1].split("=", 1)[1]


def main() -> int:
    args = sys.argv[1:]
    usage = "usage: bench/farm_slow_node.py [REPS] [--max-parallel 1] [--visits V] [--runs N]"
    one = "--max-parallel" in args
    if one:
        i = args.index("--max-parallel")
        if args[i + 1:i + 2] != ["1"]:
            raise SystemExit(usage)
        del args[i:i + 2]
    runs = "12" if one else "60"
    if "--runs" in args:
        i = args.index("--runs")
        if not args[i + 1:i + 2] or not args[i + 1].isdigit():
            raise SystemExit(usage)
        runs = args[i + 1]
        del args[i:i + 2]
    visits: list[str] = []
    if "--visits" in args:
        i = args.index("--visits")
        if not args[i + 1:i + 2] or not args[i + 1].isdigit():
            raise SystemExit(usage)
        visits = ["--visits", args[i + 1]]
        del args[i:i + 2]
    reps = int(args[0]) if args else 10
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the cluster on the way out
    throttle = (["--max-parallel", "1"] if one else []) + visits
    d = Path(tempfile.mkdtemp(prefix="perflab-farm-bench-"))
    counts = {True: 0, False: 0}
    noted = 0
    loads: list[float] = []
    t0 = time.monotonic()
    conf = start(d / "cluster")
    env = {**os.environ, "SLURM_CONF": conf, "PYTHONPATH": str(ROOT / "src"), "PERFLAB_CACHE": str(d / "cache")}
    env.pop("PERFLAB_DB", None)
    db = str(d / "fleet.db")
    try:
        # Planted and plant-free alternate: both meet the machine's load of the same minutes.
        for i in range(reps):
            for slow in (True, False):
                name = f"{'planted' if slow else 'null'}{i}"
                t1 = time.monotonic()
                perflab(["fleet", "submit", name, "--nodes", "4", *throttle, "--db", db, "--",
                         "run", "--runs", runs,
                         "--command-name", "loop", "--", "sh", "-c", LOOP.format(slow="node2" if slow else "")], env)
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
                counts[slow] += named == ["node2"] if slow else bool(named)
                tt = rep["platforms"][0].get("time_test") or {}
                judged = (f"{tt.get('blocks')} blocks of a {tt['window']['seconds']} s common window"
                          if tt.get("mode") == "together" else
                          f"{tt['rounds']} rounds of visits (df {tt['df']:.0f}), node2's round ratios "
                          + "/".join(f"{r:.2f}" for r in tt["round_ratios"].get("node2", []))
                          if tt.get("mode") == "rounds" else
                          f"apart, detectable {tt.get('detectable_slowdown', float('nan')):.0%}"
                          if tt.get("mode") == "apart" else "whole campaigns")
                loads.append(os.getloadavg()[0])
                print(f"{'planted' if slow else 'null'} {i + 1}: slow hosts {named or 'none'}; node2 at {ratio:.2f} "
                      f"of the others' median; runs {min(h['headline']['n'] for h in rep['hosts'])}-"
                      f"{max(h['headline']['n'] for h in rep['hosts'])} a node; judged on {judged}"
                      + ("; report: not measured at the same time" if apart else "")
                      + f"; load {loads[-1]:.1f}; {time.monotonic() - t1:.0f} s", flush=True)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second TERM must not stop the stop
        subprocess.run([str(SCRIPT), "stop", str(d / "cluster")], capture_output=True, timeout=60)
    how = "one node at a time (--max-parallel 1)" if one else "all four at once"
    if visits:
        how += f", {visits[1]} visit(s) a node"
    print(f"farm-slow-node, {how}: found {counts[True]} of {reps} (node2 at 70 % of its twins' speed, alone), "
          f"false alarms {counts[False]} of {reps} (no plant); reports noting disjoint windows {noted} of "
          f"{2 * reps}; load average {min(loads, default=0):.1f}-{max(loads, default=0):.1f}; "
          f"{time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
