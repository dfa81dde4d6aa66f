#!/usr/bin/env python3
"""Two speeds on this machine, for real: does `perflab run` find +3 % and `perflab compare` stay quiet?

A small C program (compiled here with cc) that sleeps 30 or 48 ms at random (48 ms in 40 % of its runs: two speeds 1.6x apart,
as a vCPU that shares its host core some of the time) against the same 3 % longer. The shares at
each speed differ from campaign to campaign by chance alone, which moves a mixture's median by up
to a third; perflab compares within the speeds (stats.speeds).

1. TRIES x `perflab run -- 'work 1 0' 'work 1.03 S'` at its defaults: a success is 'slower' for
   the second with 1.03 inside its interval. The program's start-up is not stretched by a longer
   sleep, so the second command's sleep is 1.03 (T + S) - S, S the measured start-up (the median
   of `perflab run -- work 0`): its whole time is then 1.03 times the first's at both speeds,
   up to the wake-up after the sleep (about 0.05 ms unstretched: 0.005 % of the ratio). The
   script also prints what the ratio would be had only the sleep been stretched (1.03 T + S over
   T + S), which a 0.2 %-wide interval tells from 1.03.
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
/* two speeds: 30 ms, or 48 ms in 4 runs of 10 (a random draw per run); with argv[1] = R and
   argv[2] = S ms, the sleep is R (T + S) - S: the whole run R times the one at R = 1, start-up S
   included; R = 0 sleeps 0 (the start-up alone) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char **argv) {
    double f = argc > 1 ? atof(argv[1]) : 1.0, s = argc > 2 ? atof(argv[2]) : 0.0;
    unsigned char r = 0;
    FILE *u = fopen("/dev/urandom", "rb");
    if (!u || fread(&r, 1, 1, u) != 1) return 1;
    fclose(u);
    double base = r % 10 < 4 ? 48.0 : 30.0, ms = f > 0 ? f * (base + s) - s : 0.0;
    if (ms < 0) ms = 0;
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
        ms = 1e3 * overhead
        # what a sleep-only stretch would give: the start-up left at 1x pulls the ratio under 1.03
        truth = ((30 * 1.03 + ms) / (30 + ms), (48 * 1.03 + ms) / (48 + ms))
        print(f"start-up of the command (sleep 0): {ms:.2f} ms, stretched with the sleep: true ratio 1.03 "
              f"(a sleep-only stretch would give {truth[0]:.4f} .. {truth[1]:.4f})", flush=True)
        ok = true_ok = 0
        for i in range(tries):
            res = perflab("run", "--db", db, "--energy", "off", "--seed", str(i), f"{work} 1 0",
                          f"{work} 1.03 {ms:.4f}")
            ref, other = res["benchmarks"]
            rel = other["relative"]
            slower = rel["verdict"] == "slower"
            hit = slower and rel["low"] <= 1.03 <= rel["high"]
            hit_true = slower and rel["low"] <= truth[1] and truth[0] <= rel["high"]
            ok += hit
            true_ok += hit_true
            mark = "" if hit else "  <- holds the sleep-only ratio, not 1.03" if hit_true else "  <- miss"
            print(f"run {i + 1}: {rel['verdict'] or 'no difference'} {rel['ratio']:.4f} "
                  f"[{rel['low']:.4f}, {rel['high']:.4f}] {100 * rel['level']:.1f}% "
                  f"({ref['summary']['n']} and {other['summary']['n']} runs; "
                  f"{rel.get('speeds') or 'one speed'}){mark}", flush=True)
        print(f"perflab run: 'slower' with 1.03 inside the interval in {ok} of {tries} (the sleep-only "
              f"ratio {truth[0]:.4f}..{truth[1]:.4f} inside in {true_ok} of {tries})", flush=True)
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
