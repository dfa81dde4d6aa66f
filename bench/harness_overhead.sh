#!/usr/bin/env bash
# Per-run harness overhead: `perflab run --runs 500 -- true` against `hyperfine -N --runs 500 true`,
# measured in the same invocation, alternating tools over ROUNDS rounds.
#
# Two numbers per tool:
#   per-run cost  = (total wall time of the whole tool invocation) / runs   [what a user waits]
#   reported mean = the tool's own mean time of `true` (its timer's view of one run)
# Overhead of a tool = per-run cost - the mean time of `true` measured by that tool: the time the
# harness itself spends per run (spawn bookkeeping, reaping, storing the result) beyond the
# process's own life, plus the tool's start-up amortised over the runs.
# perflab commits every measurement to its store before the next run; with the store on disk
# that commit's fsync (SQLite synchronous=FULL) is part of perflab's per-run cost, so perflab is
# run twice per round: store on disk ($TMPDIR) and store in memory (/dev/shm), which isolates
# the harness itself (spawn server round trip, Python bookkeeping, SQLite insert without fsync).
# Goal: perflab's per-run cost and overhead at most hyperfine's.
set -euo pipefail
cd "$(dirname "$0")/.."
PERFLAB=${PERFLAB:-.venv/bin/perflab}
RUNS=${RUNS:-500}
ROUNDS=${ROUNDS:-3}
tmp=$(mktemp -d)
shm=$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)
trap 'rm -rf "$tmp" "$shm"' EXIT
command -v hyperfine >/dev/null || { echo "hyperfine not installed" >&2; exit 1; }

now() { date +%s.%N; }
for r in $(seq "$ROUNDS"); do
  t0=$(now); "$PERFLAB" run --db "$tmp/b.db" --runs "$RUNS" --export-json "$tmp/p$r.json" -- true >/dev/null; t1=$(now)
  echo "$t0 $t1" > "$tmp/p$r.t"
  t0=$(now); "$PERFLAB" run --db "$shm/b.db" --runs "$RUNS" --export-json "$tmp/m$r.json" -- true >/dev/null; t1=$(now)
  echo "$t0 $t1" > "$tmp/m$r.t"
  t0=$(now); hyperfine -N --runs "$RUNS" --export-json "$tmp/h$r.json" true >/dev/null 2>&1; t1=$(now)
  echo "$t0 $t1" > "$tmp/h$r.t"
done

python3 - "$tmp" "$RUNS" "$ROUNDS" <<'PY'
import json, statistics, sys
tmp, runs, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def load(tag):
    cost, mean = [], []
    for r in range(1, rounds + 1):
        t0, t1 = map(float, open(f"{tmp}/{tag}{r}.t").read().split())
        cost.append((t1 - t0) / runs)
        mean.append(json.load(open(f"{tmp}/{tag}{r}.json"))["results"][0]["mean"])
    return statistics.median(cost), statistics.median(mean)
pc, pm = load("p")
mc, mm = load("m")
hc, hm = load("h")
print(f"runs per invocation: {runs}, rounds: {rounds} (medians over rounds)")
print(f"{'tool':24} {'per-run cost':>14} {'mean of true':>14} {'overhead':>10}")
for name, c, m in (("perflab (store on disk)", pc, pm), ("perflab (store in RAM)", mc, mm),
                   ("hyperfine -N", hc, hm)):
    print(f"{name:24} {c*1e3:11.3f} ms {m*1e3:11.3f} ms {(c-m)*1e3:7.3f} ms")
print(f"per-run cost ratio perflab/hyperfine: disk store {pc/hc:.2f}, RAM store {mc/hc:.2f} "
      "(goal <= 1)")
PY
