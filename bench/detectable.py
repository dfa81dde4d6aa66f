#!/usr/bin/env python3
"""The smallest change the gate can detect on this machine with 2, 5 and 10 runs a side, by wall
time and by instructions (--instrument cachegrind), side by side, measured in the same run.

A small C program (a loop of LOOPS iterations, about 17 million instructions, 5-10 ms) runs natively
NATIVE times and under Cachegrind SIMULATED times, interleaved (three native runs, then one
simulated, so both see the same minutes of the machine). For each n, the runs are cut into
disjoint samples of n and n, and each pair is given to the gate's own power rule
(stats/judge.py: min_detectable for a time, ranks and the MAD spread, infinite where an
exact Mann-Whitney test cannot go below alpha; counted_test for a count, Welch's t on logs, 0
where every run counts the same): the median over the pairs is printed, at alpha 0.05 (one
gated test) and power 0.8.
Usage: bench/detectable.py [NATIVE [SIMULATED [LOOPS]]]   (defaults 60, 20, 2000000)
"""

from __future__ import annotations

import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perflab.measure.cachegrind import CachegrindExecutor
from perflab.measure.real import RealExecutor
from perflab.model import RunSpec
from perflab.platform.cache_model import detect
from perflab.stats import judge

PROGRAM = r"""
#include <stdio.h>
int main(void) {
    volatile unsigned long s = 0;
    for (unsigned long i = 0; i < LOOPS; i++) s += i * i;
    printf("%lu\n", (unsigned long)s);
    return 0;
}
"""
ALPHA, POWER, SIZES = 0.05, 0.8, (2, 5, 10)


def pairs(values: list[float], n: int) -> list[tuple[list[float], list[float]]]:
    """Disjoint (A, B) samples of n runs each, in the order measured."""
    return [(values[i:i + n], values[i + n:i + 2 * n]) for i in range(0, len(values) - 2 * n + 1, 2 * n)]


def by_time(values: list[float], n: int) -> float:
    ps = pairs(values, n)
    return statistics.median(judge.min_detectable(a, b, ALPHA, POWER) for a, b in ps) if ps else math.nan


def by_count(values: list[float], n: int) -> tuple[float, bool]:
    """(smallest detectable change, whether every pair was counted) at n runs a side."""
    ps = pairs(values, n)
    if not ps:
        return math.nan, False
    if all(judge.counted(a, b) for a, b in ps):
        return statistics.median(judge.counted_test(a, b, ALPHA, POWER)[4] for a, b in ps), True
    return statistics.median(judge.min_detectable(a, b, ALPHA, POWER) for a, b in ps), False


def cell(x: float) -> str:
    if math.isinf(x):
        return "none (ranks cannot reach alpha)"
    if math.isnan(x):
        return "n/a (too few runs)"
    return "any (every run counted the same: exact)" if x == 0 else f"{100 * x:.3g} %"


def main() -> int:
    args = [int(a) for a in sys.argv[1:]]
    native_n, sim_n, loops = (args + [60, 20, 2000000][len(args):])[:3]
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = Path(tmp) / "work.c", Path(tmp) / "work"
        src.write_text(PROGRAM)
        subprocess.run(["gcc", "-O1", f"-DLOOPS={loops}", "-o", str(exe), str(src)], check=True)
        model = detect()
        walls: list[float] = []
        counts: list[float] = []
        start = time.monotonic()
        with RealExecutor() as inner:
            sim = CachegrindExecutor(inner, model)
            try:
                while len(walls) < native_n or len(counts) < sim_n:
                    for _ in range(3 if len(walls) < native_n else 0):
                        walls.append(inner.run(RunSpec(argv=(str(exe),), label="work")).wall_s)
                    if len(counts) < sim_n:
                        r = sim.run(RunSpec(argv=(str(exe),), label="work", instrument="cachegrind"))
                        counts.append(r.metrics["instructions"])
            finally:
                sim.close()
    cv = statistics.pstdev(walls) / statistics.mean(walls)
    spread = max(abs(c / statistics.median(counts) - 1) for c in counts)
    print(f"detectable: {native_n} native runs (median {1e3 * statistics.median(walls):.2f} ms, CV "
          f"{100 * cv:.1f} %), {sim_n} simulated (instructions {statistics.median(counts):,.0f}, largest "
          f"deviation from the median {spread:.1e}); cache model {model.text()}; "
          f"{time.monotonic() - start:.0f} s; alpha {ALPHA}, power {POWER}, one gated test")
    print("| runs a side | by wall time | by instructions |")
    print("| --- | --- | --- |")
    for n in SIZES:
        seen, counted = by_count(counts, n)
        how = "" if counted or math.isnan(seen) else " (ranked: counts varied)"
        print(f"| {n} | {cell(by_time(walls, n))} | {cell(seen)}{how} |")
    print(f"one instruction is {100 / statistics.median(counts):.1e} % of this program")
    return 0


if __name__ == "__main__":
    sys.exit(main())
