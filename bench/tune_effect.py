"""Does `perflab machine tune` help here? The same workload untuned and tuned, interleaved.

Design: R rounds; each round one block of K runs untuned and one block tuned, in ABBA order
(untuned first in even rounds), every run pinned to the benchmark CPU in both states. A tuned
block is `perflab machine tune` (the knobs chosen with --only, all by default) then the block
run from inside perflab.bench, then reset: the state alternates with the blocks, so drift of the
machine (other people's load on a shared VM) falls on both alike. Per block: the coefficient
of variation of the wall times, the relative width of the median's 95 % interval (order
statistics, at its achieved level) and the median. Per state, pooled: the share of runs in
the slower of two speeds (stats/modes.py), with a percentile bootstrap over rounds (400
resamples, rounds as the unit). Tuned against untuned: each block statistic as a paired ratio
over rounds, exp of the Hodges-Lehmann estimate of the per-round log ratios with Tukey's
interval at its achieved level and Wilcoxon's signed-rank p (stats/shift.paired_ratio_ci),
Holm-adjusted over the three statistics. The untuned and tuned columns are medians over blocks.

The workload is a C program (pointer chasing through 4 MiB, then arithmetic: ~30 ms), built
once with the system compiler. Needs root (it tunes the machine); resets on exit, Ctrl-C and
errors.

    sudo PYTHONPATH=src python bench/tune_effect.py [--rounds 16] [--runs 15] [--cpu 1] [--only aslr,perf_rate]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

from perflab.measure.real import RealExecutor
from perflab.model import RunSpec
from perflab.platform.sysfs import Root
from perflab.platform.tune.knobs import KNOBS, TuneOptions
from perflab.platform.tune.reset import tuned
from perflab.stats import median
from perflab.stats.comparison import holm
from perflab.stats.describe import cv
from perflab.stats.interval import median_ci
from perflab.stats.modes import detect_modes
from perflab.stats.shift import paired_ratio_ci

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
int main(void) {
    enum { N = 1 << 19 };                       /* 4 MiB of indices */
    size_t *next = malloc(N * sizeof *next);
    for (size_t i = 0; i < N; i++) next[i] = i;
    unsigned long s = 12345;
    for (size_t i = N - 1; i > 0; i--) {        /* one random cycle (Sattolo) */
        s = s * 6364136223846793005UL + 1442695040888963407UL;
        size_t j = (s >> 33) % i, t = next[i]; next[i] = next[j]; next[j] = t;
    }
    size_t p = 0;
    for (long k = 0; k < 400000; k++) p = next[p];
    double x = 1.0;
    for (long k = 0; k < 8000000; k++) x = x * 1.0000001 + 1e-9;
    printf("%zu %g\n", p, x);
    return 0;
}
"""


def build(tmp: str) -> str:
    src, exe = os.path.join(tmp, "chase.c"), os.path.join(tmp, "chase")
    with open(src, "w") as fh:
        fh.write(PROGRAM)
    subprocess.run(["cc", "-O2", "-o", exe, src], check=True)
    return exe


def block(executor: RealExecutor, exe: str, cpu: int, k: int) -> list[float]:
    spec = RunSpec(argv=(exe,), cpus=(cpu,), label="chase")
    out = []
    for _ in range(k):
        r = executor.run(spec)
        if r.exit_code != 0:
            raise SystemExit(f"the workload failed: {r.stderr_tail}")
        out.append(r.wall_s)
    return out


def stats_of(xs: list[float]) -> dict[str, float]:
    m = median(xs)
    ci = median_ci(xs, 0.95)
    return {"cv": cv(xs), "ci_width": (ci.high - ci.low) / m, "median": m, "ci_level": ci.level}


def slow_share(runs: list[float]) -> float:
    modes = detect_modes(runs)
    if len(modes.modes) < 2:
        return 0.0
    return sum(1 for lab in modes.labels if lab == 1) / len(runs)


def boot_share(blocks: list[list[float]], seed: int, n_boot: int = 400) -> tuple[float, float, float]:
    """The slow-speed share pooled over blocks, and its 95 % percentile bootstrap over rounds."""
    rng = random.Random(seed)
    point = slow_share([x for b in blocks for x in b])
    reps = sorted(slow_share([x for b in (rng.choice(blocks) for _ in blocks) for x in b]) for _ in range(n_boot))
    return point, reps[int(0.025 * n_boot)], reps[int(0.975 * n_boot) - 1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=16)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--cpu", type=int, default=1)
    ap.add_argument("--only", default=None, help="knobs, as 'perflab machine tune --only'")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("tune_effect.py tunes the machine: run it as root")
    only = frozenset(args.only.split(",")) if args.only else None
    opts = TuneOptions(cpus=(args.cpu,), only=only)
    root = Root("/")
    tmp = tempfile.mkdtemp(prefix="perflab-tune-effect-")
    blocks: dict[str, list[list[float]]] = {"untuned": [], "tuned": []}
    notes: list[str] = []
    try:
        exe = build(tmp)
        with RealExecutor() as executor:
            block(executor, exe, args.cpu, 3)  # warm the page cache
        for r in range(args.rounds):
            for state in (("untuned", "tuned") if r % 2 == 0 else ("tuned", "untuned")):
                # A fresh executor per block: its spawn server (and so every run) starts in the
                # cpuset this process is in at that moment, perflab.bench when tuned.
                if state == "tuned":
                    with tuned(root, opts, "bench/tune_effect.py", notes.append), RealExecutor() as executor:
                        blocks[state].append(block(executor, exe, args.cpu, args.runs))
                else:
                    with RealExecutor() as executor:
                        blocks[state].append(block(executor, exe, args.cpu, args.runs))
            print(f"round {r + 1}/{args.rounds}", file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    per = {s: [stats_of(b) for b in bl] for s, bl in blocks.items()}
    load = open("/proc/loadavg").read().split()[:3]
    out = {"rounds": args.rounds, "runs": args.runs, "cpu": args.cpu, "knobs": sorted(only or KNOBS),
           "loadavg_at_end": load, "rows": []}
    print(f"{args.rounds} rounds x {args.runs} runs per state, CPU {args.cpu}, knobs {','.join(sorted(only or KNOBS))}; "
          f"load average at the end {' '.join(load)}")
    rows = []
    for key, what in (("cv", "CV"), ("ci_width", "median CI width (rel.)"), ("median", "median wall [s]")):
        a = [p[key] for p in per["untuned"]]
        b = [p[key] for p in per["tuned"]]
        if min(a + b) <= 0:
            notes.append(f"{what}: a block statistic of 0, no ratio")
            continue
        ratio, ci, p = paired_ratio_ci(b, a, 0.95)
        rows.append((key, what, median(a), median(b), ratio, ci, p))
    adjusted = holm([r[-1] for r in rows])  # three questions of one data set
    print(f"{'statistic':<24}{'untuned':>10}{'tuned':>10}   tuned/untuned [CI, level]   p (Holm)")
    for (key, what, ma, mb, ratio, ci, p), p_holm in zip(rows, adjusted):
        out["rows"].append({"statistic": key, "untuned": ma, "tuned": mb, "ratio": ratio, "ci": ci.as_dict(),
                            "p": p, "p_holm": p_holm})
        print(f"{what:<24}{ma:>10.4g}{mb:>10.4g}   {ratio:.3f} [{ci.low:.3f}, {ci.high:.3f}, "
              f"{100 * ci.level:.1f} %]   {p_holm:.3g}")
    for state in ("untuned", "tuned"):
        share, lo, hi = boot_share(blocks[state], seed=1)
        out[f"slow_share_{state}"] = {"share": share, "low": lo, "high": hi}
        print(f"two-speed share, {state}: {100 * share:.1f} % (95 % bootstrap over rounds {100 * lo:.1f}..{100 * hi:.1f} %)")
    out["tune_lines"] = sorted(set(notes))[:20]
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({**out, "blocks": blocks}, fh, indent=1)


if __name__ == "__main__":
    main()
