#!/usr/bin/env bash
# Start-up: wall time of `perflab --help`, of `perflab run --runs 1 -- true` with a store that does
# not exist yet (run1new: the first run a new user makes; goal under 150 ms) and with an existing
# one (run1; goal under 150 ms), and of `perflab run --runs 10 -- true` (start-up, ten runs and one command's
# analysis: median CI, quartiles, outliers), against `hyperfine -N` with as many runs and the
# libraries' floor (a Python that imports click and rich's console and table, which perflab run
# cannot do without), all timed by hyperfine. Processes on this VM run at one of two speeds (about 1.45x apart, the libraries'
# floor included), and the share of slow ones drifts: the runs go in BLOCKS blocks of RUNS runs,
# every command in every block, the medians pool the blocks, and run1/floor is also given as the
# median of its ratio within each block, which the drift moves less. The store is a file on disk:
# run1 writes one that exists, run1new one removed before each of its runs (so its time includes
# creating the file and its schema), and the machine capture has been cached for this boot by a
# first run (see perflab/platform/hostcache.py).
set -euo pipefail
cd "$(dirname "$0")/.."
PERFLAB=${PERFLAB:-.venv/bin/perflab}
PY=${PY:-.venv/bin/python}
BLOCKS=${BLOCKS:-15}
RUNS=${RUNS:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# An installed perflab has its bytecode cached; without it every start compiles ~70 modules
# (about 70 ms here), which is not what a user waits for.
unset PYTHONDONTWRITEBYTECODE
$PY -m compileall -q src/perflab >/dev/null
$PERFLAB run --db "$tmp/s.db" --runs 1 -- true >/dev/null  # creates the store, fills the cache
for b in $(seq "$BLOCKS"); do
  # run1new's store is removed before each of its runs (hyperfine's --prepare, one per command)
  hyperfine -N --warmup 1 --runs "$RUNS" --export-json "$tmp/b$b.json" \
    --prepare true --prepare "rm -f $tmp/new.db $tmp/new.db-wal $tmp/new.db-shm" --prepare true \
    --prepare true --prepare true --prepare true --prepare true \
    -n help "$PERFLAB --help" \
    -n run1new "$PERFLAB run --db $tmp/new.db --runs 1 -- true" \
    -n run1 "$PERFLAB run --db $tmp/s.db --runs 1 -- true" \
    -n run10 "$PERFLAB run --db $tmp/s.db --runs 10 -- true" \
    -n floor "$PY -c 'import click, rich.console, rich.table'" \
    -n hyperfine1 "hyperfine -N --runs 1 true" \
    -n hyperfine10 "hyperfine -N --runs 10 true" >/dev/null 2>&1
done
python3 - "$tmp" <<'PY'
import glob, json, os, statistics, sys
times, paired, new_old, new_hf = {}, [], [], []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "b*.json"))):
    block = {x["command"]: x["times"] for x in json.load(open(path))["results"]}
    for k, v in block.items():
        times.setdefault(k, []).extend(v)
    # run1 against the floor timed in the same block: less moved by the share of slow processes
    paired.append(statistics.median(block["run1"]) / statistics.median(block["floor"]))
    new_old.append(statistics.median(block["run1new"]) / statistics.median(block["run1"]))
    new_hf.append(statistics.median(block["run1new"]) / statistics.median(block["hyperfine1"]))
med = {k: statistics.median(v) for k, v in times.items()}
n = len(times["run1"])
print(f"load {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; medians of {n} runs in "
      f"{len(glob.glob(os.path.join(sys.argv[1], 'b*.json')))} interleaved blocks")
for name, goal in (("help", 0.150), ("run1new", 0.150), ("run1", 0.150), ("run10", None), ("floor", None),
                   ("hyperfine1", None), ("hyperfine10", None)):
    t = times[name]
    verdict = "" if goal is None else ("meets" if med[name] < goal else "MISSES") + f" the {goal*1e3:.0f} ms goal; "
    print(f"{name:11} median {med[name]*1e3:7.1f} ms (min {min(t)*1e3:.1f}, max {max(t)*1e3:.1f}); "
          f"{verdict}ratio to the library floor: {med[name] / med['floor']:.2f}")
print(f"run1 / floor, median over blocks of the ratio within each block: {statistics.median(paired):.2f}")
print(f"run1new / run1 (new store against existing), the same: {statistics.median(new_old):.2f}; "
      f"run1new / hyperfine1: {statistics.median(new_hf):.0f}")
PY
