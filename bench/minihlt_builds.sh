#!/usr/bin/env bash
# events/s of minihlt built four ways (-O2, -O3 -march=native, -O2 -flto, PGO on -O2), measured
# interleaved in one `perflab run` (shuffled order each round), with the checksum checked equal.
# Usage: bench/minihlt_builds.sh [RUNS]   env: EVENTS (100), STATIC_MB (120), OUT (temp dir)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
PERFLAB=${PERFLAB:-.venv/bin/perflab}
RUNS=${1:-${RUNS:-10}}
EVENTS=${EVENTS:-100}
STATIC_MB=${STATIC_MB:-120}
OUT=${OUT:-$(mktemp -d /tmp/minihlt-builds.XXXXXX)}
mkdir -p "$OUT"

echo "building (cached after the first time) ..."
mapfile -t BIN < <("$PY" - <<'PYEOF'
from perflab.kernels import minihlt
print(minihlt.build_minihlt(("-O2",)).path)
print(minihlt.build_minihlt(("-O3", "-march=native")).path)
print(minihlt.build_minihlt(("-O2", "-flto"), ldflags=("-flto",)).path)
# train on another seed than the one measured, so PGO is not tuned to the measured events
print(minihlt.build_minihlt_pgo(("-O2",), training_args=("--events", "60", "--static-mb", "32", "--seed", "7")).path)
PYEOF
)
NAMES=("-O2" "-O3 -march=native" "-O2 -flto" "-O2 PGO")
ARGS="--events $EVENTS --static-mb $STATIC_MB"
"$PERFLAB" run --runs "$RUNS" --warmup 1 --db "$OUT/bench.db" --export-json "$OUT/builds.json" \
  -n "${NAMES[0]}" -n "${NAMES[1]}" -n "${NAMES[2]}" -n "${NAMES[3]}" \
  --metric '(?m)^events/s: (?P<events_per_s>[\d.]+)$' \
  --metric '(?m)^checksum: 0x[0-9a-f]+ \((?P<checksum>\d+)\)$' \
  "${BIN[0]} $ARGS" "${BIN[1]} $ARGS" "${BIN[2]} $ARGS" "${BIN[3]} $ARGS" > "$OUT/run.txt" 2>&1 \
  || { cat "$OUT/run.txt"; exit 1; }

"$PY" - "$OUT/builds.json" "$EVENTS" <<'PYEOF'
import json, sys
from perflab import stats

data = json.load(open(sys.argv[1]))
events = int(sys.argv[2])
rows = []
for r in data["results"]:
    values = r.get("metric_values") or {}  # per-run values; "metrics" holds their medians
    eps = [x for x in values.get("events_per_s", []) if x is not None]
    ru = r.get("rusage") or {}
    # events per CPU second (user+sys of the whole run, static loading included): far less
    # sensitive than wall time to other processes competing for the CPUs
    cpu = [events / (u + s) for u, s in zip(ru.get("user", []), ru.get("system", [])) if u + s > 0]
    rows.append((r["command"], eps, cpu, set(values.get("checksum", []))))


def table(title, col):
    base = rows[0][col]
    print(f"{title}\n{'build':20s} {'runs':>4s} {'median [95% CI]':>26s} {'vs -O2 [95% CI]':>22s} {'p (Holm)':>9s}")
    tests = [stats.compare(r[col], base) for r in rows[1:]]
    adjusted = [1.0] + stats.holm([t.p_value for t in tests])
    for (name, *cols), p in zip(rows, adjusted):
        xs = cols[col - 1]
        lo, hi = stats.bootstrap_median_ci(xs)
        r = stats.ratio_of_medians(xs, base)
        print(f"{name:20s} {len(xs):4d} {stats.summary(xs).median:9.2f} [{lo:7.2f}, {hi:7.2f}]"
              f"   {r.ratio:6.3f} [{r.lo:.3f}, {r.hi:.3f}] {p:9.3f}")


table("events/s (minihlt's own metric, wall time of the event loop):", 1)
print()
table("events per CPU second (user+sys of the run):", 2)
checks = set().union(*(r[3] for r in rows))
print(f"checksum identical across builds: {'yes' if len(checks) == 1 else 'NO: ' + str(sorted(checks))}")
PYEOF
echo "results: $OUT/builds.json, $OUT/run.txt"
