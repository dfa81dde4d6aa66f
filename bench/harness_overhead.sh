#!/usr/bin/env bash
# Harness overhead per run: `perflab run --runs 500 -- true` against `hyperfine -N --runs 500 true`,
# in the same invocation of this script, tools alternating over ROUNDS rounds.
#
# Definitions (all medians over the rounds):
#   per-run cost   = total wall time of `TOOL ... --runs 500 true` / 500  (what a user waits per run,
#                    the tool's start-up amortised over 500 runs)
#   marginal cost  = (wall(500 runs) - wall(50 runs)) / 450: the cost of one more run, start-up
#                    and final analysis excluded
#   mean of true   = the tool's own reported mean time of `true`
#   overhead       = marginal cost - mean of true: what the harness spends per run beyond the
#                    life of the process it measures (spawn bookkeeping, reaping, storing)
# A lone command's runs go back to back in perflab's spawn server, which journals each run's
# record before it starts the next (kill -9 loses at most the run in flight) while perflab
# commits them to its store a group at a time (measure/journal.py; WAL, synchronous=NORMAL: no
# fsync per run). perflab runs twice: store on disk ($TMPDIR) and in memory (/dev/shm), which
# isolates the harness itself from the disk.
# Goal: perflab's marginal cost per run at most 1.0x hyperfine -N's, store on disk.
set -euo pipefail
cd "$(dirname "$0")/.."
PERFLAB=${PERFLAB:-.venv/bin/perflab}
RUNS=${RUNS:-500}
SMALL=${SMALL:-50}
ROUNDS=${ROUNDS:-3}
command -v hyperfine >/dev/null || { echo "hyperfine not installed" >&2; exit 1; }
tmp=$(mktemp -d)
shm=$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)
trap 'rm -rf "$tmp" "$shm"' EXIT

now() { date +%s.%N; }
timed() {  # timed TAG N CMD... : records wall seconds in $tmp/TAG.N.r<round>
  local tag=$1 n=$2; shift 2
  local t0 t1; t0=$(now); "$@" >/dev/null 2>&1; t1=$(now)
  echo "$t0 $t1" > "$tmp/$tag.$n.r$r"
}
for r in $(seq "$ROUNDS"); do
  for n in "$SMALL" "$RUNS"; do
    timed disk "$n" $PERFLAB run --db "$tmp/b.db" --runs "$n" --export-json "$tmp/disk.$n.r$r.json" -- true
    timed ram "$n" $PERFLAB run --db "$shm/b.db" --runs "$n" --export-json "$tmp/ram.$n.r$r.json" -- true
    timed hf "$n" hyperfine -N --runs "$n" --export-json "$tmp/hf.$n.r$r.json" true
  done
done

python3 - "$tmp" "$RUNS" "$SMALL" "$ROUNDS" <<'PY'
import json, os, statistics, sys
tmp, runs, small, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def wall(tag, n, r):
    t0, t1 = map(float, open(f"{tmp}/{tag}.{n}.r{r}").read().split())
    return t1 - t0
def row(tag):
    cost, marg, mean, fixed = [], [], [], []
    for r in range(1, rounds + 1):
        big, sm = wall(tag, runs, r), wall(tag, small, r)
        m = (big - sm) / (runs - small)
        cost.append(big / runs); marg.append(m); fixed.append(sm - small * m)
        mean.append(json.load(open(f"{tmp}/{tag}.{runs}.r{r}.json"))["results"][0]["mean"])
    med = statistics.median
    return med(cost), med(marg), med(mean), med(fixed)
rows = {tag: row(tag) for tag in ("disk", "ram", "hf")}
names = {"disk": "perflab, store on disk", "ram": "perflab, store in RAM", "hf": "hyperfine -N"}
print(f"{runs} vs {small} runs per invocation, {rounds} rounds (medians), load {os.getloadavg()[0]:.2f}")
print(f"{'tool':24} {'per-run cost':>13} {'marginal':>10} {'mean true':>10} {'overhead':>9} {'start-up':>9}")
for tag, (c, m, t, f) in rows.items():
    print(f"{names[tag]:24} {c*1e3:10.3f} ms {m*1e3:7.3f} ms {t*1e3:7.3f} ms "
          f"{(m-t)*1e3:6.3f} ms {f*1e3:6.0f} ms")
hc, hm, ht, _ = rows["hf"]
for tag in ("disk", "ram"):
    c, m, t, _ = rows[tag]
    print(f"{names[tag]}: per-run cost ratio perflab/hyperfine {c/hc:.2f}, marginal ratio "
          f"{m/hm:.2f}, overhead {(m-t)*1e3:.3f} ms vs {(hm-ht)*1e3:.3f} ms (goal: ratios <= 1)")
PY
