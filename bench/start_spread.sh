#!/usr/bin/env bash
# Start spread (latest minus earliest start of N concurrent copies) of a gated launch (copies wait
# at the start barrier, measure/barrier.py, and are released together) vs a sequential launch (each spawned as soon as the
# previous one is), through perflab's RealExecutor.run_concurrent(together=True/False).
# Medians over REPS repetitions (default 20), gated and sequential interleaved.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
REPS=${REPS:-20} "$PY" - <<'PY'
import os, statistics, time
from perflab.measure.executor import RealExecutor
from perflab.model import RunSpec

reps = int(os.environ["REPS"])
spec = RunSpec(argv=("sleep", "0.02"), capture_output=False)
ex = RealExecutor()
ex.run_concurrent([spec], together=True)  # build/warm the barrier trampoline first
rows = []
for n in (2, 4, 8, 16):
    spreads = {True: [], False: []}
    for r in range(reps):
        for together in ((True, False) if r % 2 == 0 else (False, True)):
            cr = ex.run_concurrent([spec] * n, together=together)
            assert all(x.ok for x in cr.results), cr.results[0].stderr_tail
            spreads[together].append(cr.start_spread_ns / 1e3)
    rows.append((n, statistics.median(spreads[True]), statistics.median(spreads[False])))
print(f"start spread, median of {reps} launches ({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})")
print(f"{'copies':>6}  {'gated [us]':>11}  {'sequential [us]':>15}  {'sequential/gated':>16}")
for n, g, s in rows:
    print(f"{n:>6}  {g:>11.1f}  {s:>15.1f}  {s / g if g else float('inf'):>16.1f}")
PY
