#!/usr/bin/env bash
# Start-up time of `perflab --help` (goal < 150 ms), timed by hyperfine over 20 runs.
set -euo pipefail
cd "$(dirname "$0")/.."
PERFLAB=${PERFLAB:-.venv/bin/perflab}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
hyperfine -N --warmup 3 --runs 20 --export-json "$tmp/s.json" "$PERFLAB --help" >&2
python3 - "$tmp/s.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
ok = "meets" if r["median"] < 0.150 else "MISSES"
print(f"perflab --help: median {r['median']*1e3:.1f} ms, mean {r['mean']*1e3:.1f} ms "
      f"(min {r['min']*1e3:.1f}, max {r['max']*1e3:.1f}); {ok} the 150 ms goal")
PY
