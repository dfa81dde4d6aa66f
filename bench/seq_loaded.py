#!/usr/bin/env python3
"""Under background load, for real: does `perflab run --until-decided` find a command 5 % slower,
or say it cannot tell within its budget, and never "no change"?

A small C program (compiled here with cc) spins a fixed count of loop iterations (CPU-bound, about
10 ms here, unloaded), the second command 5 % more of them. Beside it, one busy loop per CPU, each pinned
to its CPU and busy half the time (0.5 s on, 0.5 s off, phases apart), so that every run may
share its CPU with the load for part of its time.

1. TRIES x `perflab run --until-decided --max-runs MAX 'spin 1.00' 'spin 1.05'`: a success is
   'slower', or 'cannot tell within the budget' with the runs that would decide; a failure is
   anything else ('faster', or 'no change of 1 % or more').
2. NULLS x the same command twice: a false alarm is 'slower' or 'faster'.

Usage: bench/seq_loaded.py [TRIES [NULLS [MAX]]]   (defaults 5, 3, 150; a few minutes on a quiet
machine, far more on a busy one)
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

from perflab.store import envelope

PERFLAB = [sys.executable, "-m", "perflab"]
SOURCE = r"""
/* spin: argv[1] = R runs R * 20 million loop iterations (about 10 ms at R = 1 here, unloaded) */
#include <stdlib.h>
int main(int argc, char **argv) {
    double f = argc > 1 ? atof(argv[1]) : 1.0;
    volatile unsigned long x = 0;
    unsigned long n = (unsigned long)(f * 20e6);
    for (unsigned long i = 0; i < n; i++) x += i;
    return (int)(x & 0);
}
"""


def load(cpu: int, phase: float) -> None:
    """A busy loop pinned to ``cpu``, busy 0.5 s of every 1 s, starting ``phase`` s late."""
    os.sched_setaffinity(0, {cpu})
    time.sleep(phase)
    while True:
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            pass
        time.sleep(0.5)


def perflab(*args: str) -> tuple[dict, str]:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        out = fh.name
    p = subprocess.run([*PERFLAB, args[0], "--json", out, *args[1:]], capture_output=True, text=True)
    if p.returncode not in (0, 1):
        sys.exit(f"perflab {' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
    data = envelope.unwrap(json.loads(Path(out).read_text()))  # the study's result
    os.unlink(out)
    return data, p.stdout


def outcome(res: dict) -> str:
    rel = res["benchmarks"][1]["relative"]
    if rel.get("verdict"):
        return rel["verdict"]
    if rel.get("decision") == "within":
        return "no change of 1 % or more"
    return "cannot tell" if res["sequential"].get("final") else "undecided"


def main() -> int:
    tries = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    nulls = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    most = int(sys.argv[3]) if len(sys.argv) > 3 else 150
    loaders = []
    # a timeout's SIGTERM still ends the loaders (the finally below)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    with tempfile.TemporaryDirectory() as tmp:
        spin = Path(tmp) / "spin"
        (Path(tmp) / "spin.c").write_text(SOURCE)
        subprocess.run(["cc", "-O1", "-o", str(spin), str(Path(tmp) / "spin.c")], check=True)
        db = str(Path(tmp) / "perflab.db")
        cpus = sorted(os.sched_getaffinity(0))
        for k, cpu in enumerate(cpus):
            pid = os.fork()
            if pid == 0:
                try:
                    load(cpu, k / len(cpus))
                finally:
                    os._exit(0)
            loaders.append(pid)
        try:
            print(f"load: a busy loop on each of CPUs {cpus}, busy half of every second; "
                  f"load average {os.getloadavg()[0]:.1f}", flush=True)
            good = 0
            for i in range(tries):
                t0 = time.monotonic()
                res, _ = perflab("run", "--db", db, "--energy", "off", "--seed", str(i), "--until-decided",
                                 "--max-runs", str(most), f"{spin} 1.00", f"{spin} 1.05")
                what = outcome(res)
                rel, q = res["benchmarks"][1]["relative"], res["sequential"]
                good += what in ("slower", "cannot tell")
                need = f", needs about {q['needs_runs']} runs" if what == "cannot tell" else ""
                print(f"run {i + 1}: {what}{need}: {rel['ratio']:.4f} [{rel['low']:.4f}, {rel['high']:.4f}] "
                      f"{100 * rel['level']:.2f}% after {len(res['benchmarks'][1]['times'])} runs each "
                      f"({time.monotonic() - t0:.0f} s, load average {os.getloadavg()[0]:.1f})", flush=True)
            print(f"5 % slower: 'slower' or 'cannot tell' in {good} of {tries}", flush=True)
            quiet = 0
            for i in range(nulls):
                res, _ = perflab("run", "--db", db, "--energy", "off", "--seed", str(100 + i), "--until-decided",
                                 "--max-runs", str(most), f"{spin} 1.00", f"{spin} 1.00 #2")
                what = outcome(res)
                rel = res["benchmarks"][1]["relative"]
                quiet += what not in ("slower", "faster")
                print(f"null {i + 1}: {what}: {rel['ratio']:.4f} [{rel['low']:.4f}, {rel['high']:.4f}] after "
                      f"{len(res['benchmarks'][1]['times'])} runs each", flush=True)
            print(f"equal commands: no 'slower' or 'faster' in {quiet} of {nulls}", flush=True)
        finally:
            for pid in loaders:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
