#!/usr/bin/env python3
"""Two speeds on this machine, for real: does `perflab run` find +3 % and `perflab compare` stay quiet?

A small C program (compiled here with cc) that sleeps 30 or 48 ms at random (48 ms in 40 % of its runs: two speeds 1.6x apart,
as a vCPU that shares its host core some of the time) against the same with every sleep 3 %
longer. The shares at each speed differ from campaign to campaign by chance alone, which moves a
mixture's median by up to a third; perflab compares within the speeds (stats.speeds).

1. TRIES x `perflab run -- 'work 1.00' 'work 1.03'` at its defaults: a success is 'slower' for
   the second with 1.03 inside its interval. The true ratio of the two commands' times is a
   little under 1.03: the program's start-up (the median of `perflab run -- work 0`) and the
   wake-up after each sleep are not stretched, so an interval narrower than that gap can miss
   1.03 while it holds the truth; the script counts that too ('slower' with the interval
   reaching the range of ratios that the measured start-up gives at the two speeds; the
   wake-up is left out of it, so the true ratio is a little lower still) and prints both.
2. PAIRS x two `perflab run -- 'work 1.00'` campaigns and `perflab compare A B`: a success is no
   significant row.

Usage: bench/twospeed_real.py [TRIES [PAIRS [KEEP_DIR]]]   (defaults 10, 20; a few minutes;
KEEP_DIR keeps each run's --json output)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

PERFLAB = [sys.executable, "-m", "perflab"]
SOURCE = r"""
/* two speeds: 30 ms, or 48 ms in 4 runs of 10 (a random draw per run); every sleep times argv[1] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char **argv) {
    double f = argc > 1 ? atof(argv[1]) : 1.0;
    unsigned char r = 0;
    FILE *u = fopen("/dev/urandom", "rb");
    if (!u || fread(&r, 1, 1, u) != 1) return 1;
    fclose(u);
    double ms = (r % 10 < 4 ? 48.0 : 30.0) * f;
    struct timespec t = { (time_t)(ms / 1000), (long)((ms - 1000 * (time_t)(ms / 1000)) * 1e6) };
    while (nanosleep(&t, &t)) {}
    return 0;
}
"""


KEEP = Path(sys.argv[3]) if len(sys.argv) > 3 else None


def perflab(*args: str) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        out = fh.name
    # options before the command: after `--` everything is the command's
    p = subprocess.run([*PERFLAB, args[0], "--json", out, *args[1:]], capture_output=True, text=True)
    if p.returncode not in (0, 1):
        sys.exit(f"perflab {' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
    data = json.loads(Path(out).read_text())
    if KEEP is not None:
        KEEP.mkdir(parents=True, exist_ok=True)
        Path(out).rename(KEEP / f"{args[0]}-{len(list(KEEP.iterdir())) + 1:03d}.json")
    else:
        os.unlink(out)
    return data


def main() -> int:
    tries = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "work"
        (Path(tmp) / "work.c").write_text(SOURCE)
        subprocess.run(["cc", "-O2", "-o", str(work), str(Path(tmp) / "work.c")], check=True)
        db = str(Path(tmp) / "perflab.db")
        zero = perflab("run", "--db", db, "--energy", "off", "--runs", "30", "--", str(work), "0")
        overhead = zero["benchmarks"][0]["summary"]["median"]
        truth = ((30 * 1.03 + 1e3 * overhead) / (30 + 1e3 * overhead),
                 (48 * 1.03 + 1e3 * overhead) / (48 + 1e3 * overhead))
        print(f"start-up of the command (sleep 0): {1e3 * overhead:.2f} ms; true ratio "
              f"{truth[0]:.4f} (fast) .. {truth[1]:.4f} (slow)", flush=True)
        ok = true_ok = 0
        for i in range(tries):
            res = perflab("run", "--db", db, "--energy", "off", "--seed", str(i), f"{work} 1.00", f"{work} 1.03")
            ref, other = res["benchmarks"]
            rel = other["relative"]
            slower = rel["verdict"] == "slower"
            hit = slower and rel["low"] <= 1.03 <= rel["high"]
            hit_true = slower and rel["low"] <= truth[1] and truth[0] <= rel["high"]
            ok += hit
            true_ok += hit_true
            mark = "" if hit else "  <- holds the true ratio, not 1.03" if hit_true else "  <- miss"
            print(f"run {i + 1}: {rel['verdict'] or 'no difference'} {rel['ratio']:.4f} "
                  f"[{rel['low']:.4f}, {rel['high']:.4f}] {100 * rel['level']:.1f}% "
                  f"({ref['summary']['n']} and {other['summary']['n']} runs; "
                  f"{rel.get('speeds') or 'one speed'}){mark}", flush=True)
        print(f"perflab run: 'slower' with 1.03 inside the interval in {ok} of {tries}; with the true "
              f"ratio ({truth[0]:.4f}..{truth[1]:.4f}) inside in {true_ok} of {tries}", flush=True)
        quiet = 0
        for i in range(pairs):
            ids = [perflab("run", "--db", db, "--energy", "off", "--seed", str(100 + 2 * i + k),
                           "--", str(work), "1.00")["campaign_id"] for k in (0, 1)]
            cmp = perflab("compare", "--db", db, str(ids[0]), str(ids[1]))
            sig = [r for r in cmp["rows"] if r["significant"]]
            wall = next(r for r in cmp["rows"] if r["measure"] == "wall_s")
            quiet += not sig
            speeds = (wall.get("speeds") or {}).get("line") or "one speed"
            print(f"compare {i + 1}: {'no difference' if not sig else 'DIFFERS: ' + ', '.join(r['measure'] for r in sig)}; "
                  f"wall B/A {wall['ratio']:.4f} [{wall['ci']['low']:.4f}, {wall['ci']['high']:.4f}] ({speeds})",
                  flush=True)
        print(f"perflab compare: no difference in {quiet} of {pairs}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
