#!/usr/bin/env python3
"""Does `perflab fleet report` find a node at 70 % of its twins' speed, and stay quiet without it?

Starts two private 4-node clusters with scripts/slurm-local (node1..node4, one platform): one
with node2 slowed (`--slow node2=0.7`: a CPU quota of 0.7 of a CPU, and 0.7 of a twin's CPU
weight), one without. Each repetition submits the same `run` study (a CPU-bound shell loop) with
`fleet submit --nodes 4` and reads `fleet report --json`: found when its slow hosts are exactly
[node2], a false alarm when the plant-free cluster names any. It checks that each repetition
measured the 4 nodes, each once, and prints how often node2's quota held it back.

Two ways to run the nodes:
- at once (the default): 20 runs of a 0.1 s loop; four tasks share this 2-CPU machine, so the
  weight slows node2 (a quota of 0.7 of a CPU would not bind at half a CPU a task);
- --max-parallel 1: one node at a time, 12 runs of a 0.5 s loop; a task alone has no twin to
  share with, so the quota slows node2 -- where the machine's other load leaves a task more than
  0.7 of a CPU; the nodes run in different minutes of the machine, and the report says so (the
  bench counts the repetitions whose report carried that note).
Goal: found in >= 9 of 10, quiet in >= 9 of 10.
Usage: bench/farm_slow_node.py [REPS] [--max-parallel 1]   (default 10; needs root, Slurm and a
writable cgroup)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "slurm-local"
LOOP = "i=0; while [ $i -lt {n} ]; do i=$((i+1)); done"  # 50000: ~0.1 s at a full CPU


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


def throttled(d: Path, node: str) -> tuple[int, int]:
    """(periods with tasks, periods the quota held them back) of a node's cgroup (cpu.stat)."""
    for cg in (d / "cgroups").read_text().split():
        if cg.endswith("/" + node):
            stat = dict(ln.split()[:2] for ln in Path(cg, "cpu.stat").read_text().splitlines())
            return int(stat["nr_periods"]), int(stat["nr_throttled"])
    return 0, 0


def start(d: Path, slow: bool, share: str) -> str:
    args = [str(SCRIPT), "start", str(d), "--nodes", "4"] + (["--slow", f"node2={share}"] if slow else [])
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
    share, runs, loop = ("0.7", "12", LOOP.format(n=250000)) if one else ("0.7", "20", LOOP.format(n=50000))
    throttle = ["--max-parallel", "1"] if one else []
    tmp = Path(tempfile.mkdtemp(prefix="perflab-farm-bench-"))
    counts = {True: 0, False: 0}
    bound = noted = 0
    t0 = time.monotonic()
    for slow in (True, False):
        d = tmp / ("slow" if slow else "null")
        conf = start(d, slow, share)
        env = {**os.environ, "SLURM_CONF": conf, "PYTHONPATH": str(ROOT / "src"),
               "PERFLAB_CACHE": str(tmp / "cache")}
        env.pop("PERFLAB_DB", None)
        db = str(d / "fleet.db")
        try:
            for i in range(reps):
                name = f"{d.name}{i}"
                before = throttled(d, "node2")
                t1 = time.monotonic()
                perflab(["fleet", "submit", name, "--nodes", "4", *throttle, "--db", db, "--",
                         "run", "--runs", runs, "--command-name", "loop", "--", "sh", "-c", loop], env)
                wait_idle(env)
                after = throttled(d, "node2")
                periods, held = after[0] - before[0], after[1] - before[1]
                binds = slow and held >= 0.5 * max(periods, 1)
                bound += binds
                rep = json.loads(perflab(["fleet", "report", name, "--db", db, "--json", "-"], env))
                hosts = sorted(h["host"] for h in rep["hosts"] if h["status"] == "done")
                if hosts != ["node1", "node2", "node3", "node4"]:
                    raise SystemExit(f"{name}: measured hosts {hosts}, not node1..node4 once each")
                apart = any(not p.get("same_time", True) for p in rep["platforms"])
                noted += apart
                named = sorted(h["host"] for h in rep["slow_hosts"])
                hit = named == ["node2"] if slow else bool(named)
                counts[slow] += hit
                print(f"{'planted' if slow else 'null'} {i + 1}: slow hosts {named or 'none'}"
                      + (f"; node2's quota held it in {held} of {periods} periods" if slow else "")
                      + ("; report: not measured at the same time" if apart else "")
                      + f"; {time.monotonic() - t1:.0f} s", flush=True)
        finally:
            subprocess.run([str(SCRIPT), "stop", str(d)], capture_output=True, timeout=60)
    how = "one node at a time (--max-parallel 1)" if one else "all four at once"
    print(f"farm-slow-node, {how}: found {counts[True]} of {reps} (node2 at 70 % of its twins' CPU, alone; "
          f"the quota bound in {bound} of them), false alarms {counts[False]} of {reps} (no plant); "
          f"reports noting disjoint windows {noted} of {2 * reps}; {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
