#!/usr/bin/env bash
#: page docs/workload.md
# An empty build cache of its own, so the first build is a real one on every rerun.
# docs/workload.md: its first toml block is the perflab.toml this runs with (count, gz),
# its first C block the count.c it builds.
awk '/^```toml/{f=1;next} f&&/^```/{exit} f' "$CHECKOUT"/docs/workload.md > perflab.toml
mkdir -p src run && awk '/^```c$/{f=1;next} f&&/^```/{exit} f' "$CHECKOUT"/docs/workload.md > src/count.c
#: steps
#: block 1
perflab workload list
#: block 2
export PERFLAB_CACHE=$PWD/cache      # an empty build cache
perflab workload build count
perflab workload build count
#: show elide-sources
perflab workload build minihlt --cflags "-O3 -march=native"
#: block 3
perflab workload path minihlt
perf stat -e task-clock $(perflab workload path minihlt) --events 20 2>&1 > /dev/null | grep -E 'task-clock|elapsed'
perflab workload path gz
