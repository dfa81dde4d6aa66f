#!/usr/bin/env python3
"""Fleet report at farm scale: 1,800 to 100,000 simulated hosts on 4 platforms x 1,000 measurements each.

Fills a real PostgreSQL store (started here in a temp dir, or --db URL) with one `run` campaign
per host, as fleet tasks would record them, plants one slow host per platform (8% below its
peers; every other host differs from its platform by a host effect of sd 0.5% and per-run
noise of sd 3%), then times `perflab fleet report NAME --json` as a subprocess (wall time and
its own peak RSS) and checks its verdict. Hosts, campaigns and runs go in by COPY; each batch of
campaigns is then summarised by the store's own code (Store.summarise_runs, what a campaign
finishing as done runs for itself). Goals: the planted hosts found and no other, peak RSS
<= 1 GiB, wall <= 10 s up to 10,000 hosts and <= 60 s at 100,000.

    python bench/fleet_scale.py                          # 1,800 hosts
    python bench/fleet_scale.py --hosts 100000 --runs 1000
"""

from __future__ import annotations

import argparse
import json
import os
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
    # A bulk load: no fsync, large WAL between checkpoints (the data are thrown away after).
    subprocess.run(prefix + [f"{PG_BIN}/pg_ctl", "-D", data, "-l", f"{base}/log", "-w", "-o",
                             f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off "
                             "-c synchronous_commit=off -c full_page_writes=off -c max_wal_size=8GB "
                             "-c shared_buffers=512MB -c work_mem=64MB", "start"], check=True, capture_output=True)
    subprocess.run(prefix + [f"{PG_BIN}/createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres",
                             "fleet"], check=True, capture_output=True)

    def stop() -> None:
        subprocess.run(prefix + [f"{PG_BIN}/pg_ctl", "-D", data, "-m", "immediate", "stop"], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)

    stop.base = base  # type: ignore[attr-defined]  # the caller removes the directory
    return f"postgresql://postgres@127.0.0.1:{port}/fleet", stop


T0 = "2026-01-01 00:00:00+00"
BATCH = 1000  # hosts per COPY of runs and per summarising query (1 million rows at 1,000 runs)


def _copy(conn, table: str, columns: str, lines: list[str]) -> None:
    with conn.cursor() as cur, cur.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        copy.write("".join(lines))


RUN_COLUMNS = ("campaign_id, label, params, rep, wall_ns, user_s, sys_s, maxrss_kb, minflt, majflt, nvcsw, nivcsw, "
               "exit_code, timed_out, start_ns, end_ns, metrics, counters, created, suspect")


def _runs_text(cid: int, rates, reps) -> str:
    """One host's runs as COPY text, built by numpy's string functions (a Python f-string per
    row costs more than PostgreSQL's parsing of it)."""
    import numpy as np

    walls = (1e12 / rates).astype(np.int64)  # ns for 1,000 events
    text = np.strings.add(f"{cid}\tminihlt\t{{}}\t", reps)
    text = np.strings.add(np.strings.add(text, "\t"), walls.astype(reps.dtype))
    text = np.strings.add(text, "\t1.0\t0.01\t50000\t0\t0\t0\t5\t0\tf\t0\t0\t{\"events_per_s\": ")
    text = np.strings.add(np.strings.add(text, rates.astype(reps.dtype)), f"}}\t{{}}\t{T0}\tf\n")
    return "".join(text.tolist())


def fill(url: str, name: str, hosts: int, runs: int, seed: int) -> tuple[list[str], float, float]:
    """Hosts, campaigns and runs by COPY, then the store's summaries; returns (the planted slow
    hosts' names, seconds copying, seconds summarising)."""
    import numpy as np
    import psycopg
    from psycopg.copy import QueuedLibpqWriter

    from perflab.fleet import state
    from perflab.store import dumps, open_store
    from perflab.store.values import host_identity

    rng = np.random.default_rng(seed)
    reps = np.arange(runs).astype(np.dtypes.StringDType())
    per = hosts // len(PLATFORMS)
    planted: list[str] = []
    t_copy = t_sum = 0.0
    with open_store(url) as store, psycopg.connect(url) as conn:
        state.record_jobs(store, state.create(store, name, {
            "study": "run", "slots": [str(i) for i in range(per * len(PLATFORMS))], "log_dir": "/nonexistent",
            "job_name": f"perflab-fleet-{name}", "shards": False, "submitter": "slurm"}), {})
        with conn.cursor() as cur:
            # The foreign-key check of every run against its campaign (a trigger per row) costs
            # more than the row; the campaigns are copied in the same transaction as their runs.
            cur.execute("ALTER TABLE measurements DISABLE TRIGGER ALL")
            cur.execute("SELECT coalesce(max(id), 0) FROM hosts")
            hid0 = cur.fetchone()[0] + 1
            cur.execute("SELECT coalesce(max(id), 0) FROM campaigns")
            cid0 = cur.fetchone()[0] + 1
        conn.commit()
        slot = 0
        for p, (cpu, sockets, cores, mem_gib, rate) in enumerate(PLATFORMS):
            slow_at = int(rng.integers(per))
            topo = {"sockets": list(range(sockets)), "cores": list(range(cores))}
            for b0 in range(0, per, BATCH):
                t0 = time.monotonic()
                h_lines, c_lines, cids = [], [], []
                with conn.cursor() as cur, cur.copy(f"COPY measurements ({RUN_COLUMNS}) FROM STDIN",
                                                    writer=QueuedLibpqWriter(cur)) as copy:
                    for h in range(b0, min(per, b0 + BATCH)):
                        host = f"p{p}n{h:06d}"
                        meta, topo_, hostname, fp = host_identity(
                            {"hostname": host, "cpu_model": cpu, "mem_total_bytes": mem_gib * 2**30,
                             "kernel": {"release": "5.14.0-427.el9"}}, topo)
                        hid, cid = hid0 + slot, cid0 + slot
                        h_lines.append(f"{hid}\t{hostname}\t{fp}\t{dumps(meta)}\t{dumps(topo_)}\t{T0}\n")
                        labels = {"fleet": name, "fleet_slot": str(slot), "slurm_node": host}
                        c_lines.append(f"{cid}\trun\tdone\t{dumps({'commands': ['minihlt']})}\t"
                                       f"{dumps({'benchmarks': [{'command': 'minihlt'}]})}\t{hid}\t{T0}\t{T0}\t\t"
                                       f"{dumps(labels)}\n")
                        factor = 0.92 if h == slow_at else 1.0 + 0.005 * rng.standard_normal()
                        if h == slow_at:
                            planted.append(host)
                        # Written host by host: the server parses one host while the next is built.
                        copy.write(_runs_text(cid, rate * factor * (1.0 + 0.03 * rng.standard_normal(runs)), reps))
                        cids.append(cid)
                        slot += 1
                _copy(conn, "hosts", "id, hostname, fingerprint, metadata, topology, created", h_lines)
                _copy(conn, "campaigns", "id, study, status, config, summary, host_id, started, finished, name, "
                      "labels", c_lines)
                conn.commit()
                t1 = time.monotonic()
                # What each of these campaigns would have written as it finished as done.
                store.summarise_runs(cids, store.headline_quantity(cids[0]))
                t_copy += t1 - t0
                t_sum += time.monotonic() - t1
                print(f"  {slot:,} hosts stored ({t_copy:.0f} s copying, {t_sum:.0f} s summarising)",
                      file=sys.stderr, flush=True)
        with conn.cursor() as cur:
            cur.execute("ALTER TABLE measurements ENABLE TRIGGER ALL")
            cur.execute("SELECT setval(pg_get_serial_sequence('hosts', 'id'), (SELECT max(id) FROM hosts))")
            cur.execute("SELECT setval(pg_get_serial_sequence('campaigns', 'id'), (SELECT max(id) FROM campaigns))")
            cur.execute("ANALYZE")
        conn.commit()
    return planted, t_copy, t_sum


def replay_planted(hosts: int, runs: int, seed: int) -> list[str]:
    """The planted hosts of a store fill() made with these arguments: its draws, replayed."""
    import numpy as np

    rng = np.random.default_rng(seed)
    per = hosts // len(PLATFORMS)
    planted = []
    for p in range(len(PLATFORMS)):
        slow_at = int(rng.integers(per))
        for h in range(per):
            if h == slow_at:
                planted.append(f"p{p}n{h:06d}")
            else:
                rng.standard_normal()
            rng.standard_normal(runs)
    return planted


def report(url: str, name: str, test: str = "auto") -> tuple[float, float, dict, str]:
    """(wall s, the report process's own peak RSS in MiB, its JSON, its stderr)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    tmp = Path(tempfile.mkdtemp())
    out, log = tmp / "report.json", tmp / "report.out"
    t0 = time.monotonic()
    with open(log, "w") as fh:
        proc = subprocess.Popen([sys.executable, "-m", "perflab", "fleet", "report", name, "--db", url,
                                 "--json", str(out), "--html", str(tmp / "report.html"), "--test", test],
                                env=env, stdout=fh, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    text = log.read_text()
    rep = json.loads(out.read_text()) if os.waitstatus_to_exitcode(status) == 0 else {}
    shutil.rmtree(tmp, ignore_errors=True)
    return wall, usage.ru_maxrss / 1024, rep, text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", help="an empty PostgreSQL database URL (default: start a server here, removed after)")
    ap.add_argument("--hosts", type=int, default=1800, help="hosts in all, split over 4 platforms")
    ap.add_argument("--runs", type=int, default=1000, help="measurements per host")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=1, help="time the report this many times (median shown)")
    ap.add_argument("--test", choices=["auto", "runs", "medians"], default="auto",
                    help="the report's --test (runs: every run read and ranked, for comparison)")
    ap.add_argument("--keep", action="store_true", help="leave the server and its store running (prints the URL)")
    ap.add_argument("--report-only", action="store_true",
                    help="with --db: time the report on a store this script filled with the same "
                         "--hosts, --runs and --seed (filling 100 million runs takes a while)")
    args = ap.parse_args()
    if args.report_only and not args.db:
        ap.error("--report-only needs --db, the store an earlier run kept (--keep)")
    stop = None
    url = args.db
    if url is None:
        url, stop = start_postgres()
    try:
        if args.report_only:
            planted, t_copy, t_sum = replay_planted(args.hosts, args.runs, args.seed), None, None
        else:
            planted, t_copy, t_sum = fill(url, "scale", args.hosts, args.runs, args.seed)
        if args.keep and stop:
            print(f"store kept: {url}; stop the server with pg_ctl -D {stop.base}/data stop (as user "
                  f"postgres when run as root) and remove {stop.base}", file=sys.stderr, flush=True)
            stop = None
        timings = []
        for _ in range(args.repeat):
            wall, rss_mib, rep, text = report(url, "scale", args.test)
            if not rep:
                print(text[-3000:])
                return 1
            timings.append((wall, rss_mib))
        walls = sorted(w for w, _ in timings)
        rsss = sorted(r for _, r in timings)
        wall, rss_mib = walls[len(walls) // 2], rsss[len(rsss) // 2]
        found = sorted(s["host"] for s in rep["slow_hosts"])
        n_rows = sum(h["headline"]["n"] for h in rep["hosts"] if h.get("headline"))
        goal_s = 10.0 if args.hosts <= 10000 else 60.0
        filled = (f"copied in {t_copy:.0f} s, summarised by the store in {t_sum:.0f} s" if t_copy is not None
                  else "filled before")
        print(f"store: {len(rep['hosts']):,} hosts, {len(rep['platforms'])} platforms, {n_rows:,} measurements "
              f"({filled})")
        print(f"fleet report: {wall:.1f} s wall, peak RSS {rss_mib:.0f} MiB"
              + (f" (median of {args.repeat}: {', '.join(f'{w:.1f}' for w in walls)} s)" if args.repeat > 1 else "")
              + f" (goal: <= {goal_s:.0f} s, <= 1024 MiB)")
        print(f"planted slow hosts: {', '.join(sorted(planted))}")
        print(f"flagged slow hosts: {', '.join(found) or 'none'}")
        ok = found == sorted(planted) and wall <= goal_s and rss_mib <= 1024
        print("verdict: " + ("all planted slow hosts found, no other host flagged, within the goals" if ok else
                             "MISSED the goal (see above)"))
        return 0 if ok else 1
    finally:
        if stop:
            stop()


if __name__ == "__main__":
    sys.exit(main())
