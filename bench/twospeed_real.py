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

Usage: bench/twospeed_real.py [TRIES [PAIRS [KEEP_DIR]]] [--figures PATH]   (defaults 10, 20; a few
minutes; KEEP_DIR keeps each run's --json output; --figures writes the counts of the summary lines
and the load average to PATH as JSON: docs/figures/twospeed_real.json is the run the docs quote)
"""

from __future__ import annotations

import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from perflab.store import envelope

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


ARGS = sys.argv[1:]
FIGURES = Path(ARGS.pop(ARGS.index("--figures") + 1)) if "--figures" in ARGS[:-1] else None
ARGS = [a for a in ARGS if a != "--figures"]
KEEP = Path(ARGS[2]) if len(ARGS) > 2 else None


def figures_of(lines: list[str]) -> dict[str, int]:
    """The counts the docs quote, read from the lines main() prints (the same reading for a run
    recorded on a page and one just made)."""
    out = {"run_tries": 0, "run_slower": 0}
    for line in lines:
        if re.match(r"run \d+: ", line):
            out["run_tries"] += 1
            out["run_slower"] += line.split(": ", 1)[1].startswith("slower ")
        elif m := re.match(r"perflab run: 'slower' with 1\.03 inside the interval in (\d+) of \d+ .* inside in (\d+) of", line):
            out["run_slower_1.03_inside"], out["run_sleep_only_ratio_inside"] = int(m.group(1)), int(m.group(2))
        elif m := re.match(r"perflab compare: no difference in (\d+) of (\d+)", line):
            out["compare_no_difference"], out["compare_pairs"] = int(m.group(1)), int(m.group(2))
    return out


def perflab(*args: str) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        out = fh.name
    # options before the command: after `--` everything is the command's
    p = subprocess.run([*PERFLAB, args[0], "--json", out, *args[1:]], capture_output=True, text=True)
    if p.returncode not in (0, 1):
        sys.exit(f"perflab {' '.join(args)} failed ({p.returncode}): {p.stderr.strip()}")
    data = envelope.unwrap(json.loads(Path(out).read_text()))  # the study's result
    if KEEP is not None:
        KEEP.mkdir(parents=True, exist_ok=True)
        Path(out).rename(KEEP / f"{args[0]}-{len(list(KEEP.iterdir())) + 1:03d}.json")
    else:
        os.unlink(out)
    return data


def main() -> int:
    tries = int(ARGS[0]) if len(ARGS) > 0 else 10
    pairs = int(ARGS[1]) if len(ARGS) > 1 else 20
    printed: list[str] = []
    load = [os.getloadavg()[0]]

    def say(line: str) -> None:
        print(line, flush=True)
        printed.append(line)

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
        say(f"start-up of the command (sleep 0): {ms:.2f} ms, stretched with the sleep: true ratio 1.03 "
            f"(a sleep-only stretch would give {truth[0]:.4f} .. {truth[1]:.4f})")
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
            say(f"run {i + 1}: {rel['verdict'] or 'no difference'} {rel['ratio']:.4f} "
                f"[{rel['low']:.4f}, {rel['high']:.4f}] {100 * rel['level']:.1f}% "
                f"({ref['summary']['n']} and {other['summary']['n']} runs; "
                f"{rel.get('speeds') or 'one speed'}){mark}")
        say(f"perflab run: 'slower' with 1.03 inside the interval in {ok} of {tries} (the sleep-only "
            f"ratio {truth[0]:.4f}..{truth[1]:.4f} inside in {true_ok} of {tries})")
        quiet = 0
        for i in range(pairs):
            ids = [perflab("run", "--db", db, "--energy", "off", "--seed", str(100 + 2 * i + k),
                           "--", str(work), "1.00")["campaign_id"] for k in (0, 1)]
            cmp = perflab("compare", "--db", db, str(ids[0]), str(ids[1]))
            sig = [r for r in cmp["rows"] if r["significant"]]
            wall = next(r for r in cmp["rows"] if r["measure"] == "wall_s")
            quiet += not sig
            speeds = (wall.get("speeds") or {}).get("line") or "one speed"
            say(f"compare {i + 1}: {'no difference' if not sig else 'DIFFERS: ' + ', '.join(r['measure'] for r in sig)}; "
                f"wall B/A {wall['ratio']:.4f} [{wall['ci']['low']:.4f}, {wall['ci']['high']:.4f}] ({speeds})")
        say(f"perflab compare: no difference in {quiet} of {pairs}")
    if FIGURES is not None:
        load.append(os.getloadavg()[0])
        FIGURES.write_text(json.dumps({
            "harness": "bench/twospeed_real.py", "argv": sys.argv[1:], "recorded": datetime.date.today().isoformat(),
            "load_average": f"{min(load):.1f}-{max(load):.1f}", "figures": figures_of(printed)}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
