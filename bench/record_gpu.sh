#!/bin/sh
# Record what perflab's GPU monitor source reads, on a machine with an NVIDIA GPU, into the folder
# given as $1: the exact query the monitor runs once per sample (platform/monitor.py, GPU_QUERY),
# a few samples of it a second apart, the same query with its header (field names and units),
# the fields this driver knows (--help-query-gpu) and the full report (nvidia-smi -q).
# tests/data/nvidia-smi/ holds such a recording; tests/test_monitor_gpu.py parses it.
set -u
out=${1:?usage: bench/record_gpu.sh DIR}
mkdir -p "$out" || exit 2
command -v nvidia-smi >/dev/null 2>&1 || { echo "nvidia-smi not found: run this on a machine with an NVIDIA driver" >&2; exit 2; }
fields=index,name,power.draw,power.limit,utilization.gpu,utilization.memory,memory.used,memory.total,temperature.gpu,clocks.sm
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "command: nvidia-smi --query-gpu=$fields --format=csv,noheader,nounits"
  nvidia-smi --version 2>&1 | sed 's/^/version: /'
} > "$out/README.txt"
nvidia-smi --query-gpu=$fields --format=csv,noheader,nounits > "$out/query.csv" 2> "$out/query.stderr"
echo "status: $?" >> "$out/README.txt"
for i in 1 2 3 4 5; do
  nvidia-smi --query-gpu=$fields --format=csv,noheader,nounits
  sleep 1
done > "$out/query-5s.csv" 2>&1
nvidia-smi --query-gpu=$fields --format=csv > "$out/query-header.csv" 2>&1
nvidia-smi --help-query-gpu > "$out/help-query-gpu.txt" 2>&1
nvidia-smi -q > "$out/q.txt" 2>&1
# The query's cost per call: the monitor runs it once a sample.
start=$(date +%s%N); for i in 1 2 3 4 5 6 7 8 9 10; do nvidia-smi --query-gpu=$fields --format=csv,noheader,nounits >/dev/null 2>&1; done
end=$(date +%s%N); echo "ten queries: $(( (end - start) / 1000000 )) ms" >> "$out/README.txt"
ls -l "$out"
