#!/usr/bin/env bash
# Start-up: wall time of `perflab --help` and of `perflab run --runs 1 -- true` (issue 16 goal 1:
# under 150 ms), against `hyperfine -N --runs 1 true`, all timed by hyperfine in the same
# invocation (20 runs each, interleaved by hyperfine's own order). The store is a file on disk
# that already exists (the first run of a new file creates its schema), and the machine capture
# has been cached for this boot by a first run (see perflab/platform/hostcache.py).
set -euo pipefail
cd "$(dirname "$0")/.."
PERFLAB=${PERFLAB:-.venv/bin/perflab}
RUNS=${RUNS:-20}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# An installed perflab has its bytecode cached; without it every start compiles ~70 modules
# (about 70 ms here), which is not what a user waits for.
unset PYTHONDONTWRITEBYTECODE
${PY:-.venv/bin/python} -m compileall -q src/perflab >/dev/null
$PERFLAB run --db "$tmp/s.db" --runs 1 -- true >/dev/null  # creates the store, fills the cache
hyperfine -N --warmup 3 --runs "$RUNS" --export-json "$tmp/s.json" \
  -n help "$PERFLAB --help" \
  -n run1 "$PERFLAB run --db $tmp/s.db --runs 1 -- true" \
  -n hyperfine1 "hyperfine -N --runs 1 true" >&2
python3 - "$tmp/s.json" <<'PY'
import json, os, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
hf = r["hyperfine1"]["median"]
print(f"load {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; medians of {len(r['run1']['times'])} runs")
for name, goal in (("help", 0.150), ("run1", 0.150), ("hyperfine1", None)):
    x = r[name]
    verdict = "" if goal is None else ("meets" if x["median"] < goal else "MISSES") + f" the {goal*1e3:.0f} ms goal; "
    print(f"{name:11} median {x['median']*1e3:7.1f} ms (min {x['min']*1e3:.1f}, max {x['max']*1e3:.1f}); "
          f"{verdict}ratio to hyperfine -N --runs 1: {x['median'] / hf:.1f}")
PY
