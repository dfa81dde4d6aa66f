#!/usr/bin/env python3
"""Fleet report at farm scale: 1,800 simulated hosts on 4 platforms x 1,000 measurements each.

Fills a real PostgreSQL store (started here in a temp dir, or --db URL) with one `run` campaign
per host, as fleet tasks would record them, plants one slow host per platform (8% below its
peers; every other host differs from its platform by a host effect of sd 0.5% and per-run
noise of sd 3%), then times `perflab fleet report NAME --json` as a subprocess and checks its
verdict. Goal (issue 15): under 30 s, under 2 GiB, the 4 planted hosts found and no other.

    python bench/fleet_scale.py                 # full size
    python bench/fleet_scale.py --hosts 200     # smaller, quicker
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
PG_BIN = os.environ.get("PERFLAB_PG_BIN", "/usr/lib/postgresql/15/bin")
PLATFORMS = [("AMD EPYC 7742 64-Core Processor", 2, 128, 512, 1700.0),
             ("Intel(R) Xeon(R) Gold 6248 CPU @ 2.50GHz", 2, 40, 384, 1000.0),
             ("Intel(R) Xeon(R) CPU E5-2630 v4 @ 2.20GHz", 2, 20, 128, 620.0),
             ("Ampere Altra Q80-30", 1, 80, 256, 1250.0)]


def start_postgres() -> tuple[str, callable]:
    """A throw-away server (as tests/conftest.py starts one); returns (URL, stop)."""
    base = tempfile.mkdtemp(prefix="perflab-bench-pg-")
    prefix = []
    if os.geteuid() == 0:  # initdb refuses root
        subprocess.run(["useradd", "--system", "--no-create-home", "postgres"], capture_output=True)
        shutil.chown(base, "postgres")
        prefix = ["runuser", "-u", "postgres", "--"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = f"{base}/data"
    subprocess.run(prefix + [f"{PG_BIN}/initdb", "-D", data, "-U", "postgres", "--auth=trust", "--no-sync",
                             "-E", "UTF8", "--locale=C"], check=True, capture_output=True)
    subprocess.run(prefix + [f"{PG_BIN}/pg_ctl", "-D", data, "-l", f"{base}/log", "-w", "-o",
                             f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off "
                             "-c shared_buffers=512MB", "start"], check=True, capture_output=True)
    subprocess.run(prefix + [f"{PG_BIN}/createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres",
                             "fleet"], check=True, capture_output=True)

    def stop() -> None:
        subprocess.run(prefix + [f"{PG_BIN}/pg_ctl", "-D", data, "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)

    return f"postgresql://postgres@127.0.0.1:{port}/fleet", stop


def fill(url: str, name: str, hosts: int, runs: int, seed: int) -> list[str]:
    """Hosts, campaigns and measurements (COPY); returns the planted slow hosts' names."""
    import numpy as np
    import psycopg

    from perflab.fleet import state
    from perflab.store import dumps, open_store

    rng = np.random.default_rng(seed)
    per = hosts // len(PLATFORMS)
    planted = []
    with open_store(url) as store:
        fleet = state.create(store, name, {"study": "run", "slots": [str(i) for i in range(per * len(PLATFORMS))],
                                           "log_dir": "/nonexistent", "job_name": f"perflab-fleet-{name}",
                                           "shards": False, "submitter": "slurm"})
        state.record_jobs(store, fleet, {})
        slot = 0
        conn = psycopg.connect(url)
        for p, (cpu, sockets, cores, mem_gib, rate) in enumerate(PLATFORMS):
            slow_at = int(rng.integers(per))
            for h in range(per):
                host = f"p{p}n{h:04d}"
                hid = store.add_host({"hostname": host, "cpu_model": cpu, "mem_total_bytes": mem_gib * 2**30,
                                      "kernel": {"release": "5.14.0-427.el9"}},
                                     {"sockets": list(range(sockets)), "cores": list(range(cores))})
                cid = store.start_campaign("run", {"commands": ["minihlt"]}, host_id=hid,
                                           labels={"fleet": name, "fleet_slot": str(slot), "slurm_node": host})
                store.finish_campaign(cid, "done", summary={"benchmarks": [{"command": "minihlt"}]})
                factor = 0.92 if h == slow_at else 1.0 + 0.005 * rng.standard_normal()
                if h == slow_at:
                    planted.append(host)
                rates = rate * factor * (1.0 + 0.03 * rng.standard_normal(runs))
                buf = io.StringIO()
                for i, r in enumerate(rates):
                    wall = int(1e9 * 1000 / r)
                    buf.write(f"{cid}\tminihlt\t{{}}\t{i}\t{wall}\t{wall / 1e9:.6f}\t0.01\t50000\t0\t0\t0\t5\t0"
                              f"\tf\t0\t0\t{dumps({'events_per_s': float(r)})}\t{{}}\t2026-01-01 00:00:00+00\tf\n")
                with conn.cursor() as cur, cur.copy(
                        "COPY measurements (campaign_id, label, params, rep, wall_ns, user_s, sys_s, maxrss_kb, "
                        "minflt, majflt, nvcsw, nivcsw, exit_code, timed_out, start_ns, end_ns, metrics, "
                        "counters, created, suspect) FROM STDIN") as copy:
                    copy.write(buf.getvalue())
                conn.commit()
                slot += 1
        conn.close()
    return planted


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", help="an empty PostgreSQL database URL (default: start a server here)")
    ap.add_argument("--hosts", type=int, default=1800, help="hosts in all, split over 4 platforms")
    ap.add_argument("--runs", type=int, default=1000, help="measurements per host")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    stop = None
    url = args.db
    if url is None:
        url, stop = start_postgres()
    try:
        t0 = time.monotonic()
        planted = fill(url, "scale", args.hosts, args.runs, args.seed)
        t_fill = time.monotonic() - t0
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        out = Path(tempfile.mkdtemp()) / "report.json"
        t0 = time.monotonic()
        r = subprocess.run([sys.executable, "-m", "perflab", "fleet", "report", "scale", "--db", url,
                            "--json", str(out)], env=env, capture_output=True, text=True)
        wall = time.monotonic() - t0
        rss_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        if r.returncode != 0:
            print(r.stdout[-2000:], r.stderr[-2000:])
            return 1
        rep = json.loads(out.read_text())
        found = sorted(s["host"] for s in rep["slow_hosts"])
        n_rows = len(rep["hosts"]) * args.runs
        print(f"store: {len(rep['hosts'])} hosts, {len(rep['platforms'])} platforms, {n_rows:,} measurements "
              f"(filled in {t_fill:.0f} s)")
        print(f"fleet report: {wall:.1f} s wall, peak RSS {rss_mib:.0f} MiB (goal: < 30 s, < 2048 MiB)")
        print(f"planted slow hosts: {', '.join(sorted(planted))}")
        print(f"flagged slow hosts: {', '.join(found) or 'none'}")
        ok = found == sorted(planted) and wall < 30 and rss_mib < 2048
        print("verdict: " + ("all planted slow hosts found, no other host flagged, within the goals" if ok else
                             "MISSED the goal (see above)"))
        return 0 if ok else 1
    finally:
        if stop:
            stop()


if __name__ == "__main__":
    sys.exit(main())
