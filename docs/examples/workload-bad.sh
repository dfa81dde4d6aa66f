#!/usr/bin/env bash
#: page docs/workload.md
# docs/workload.md: its first toml block is the perflab.toml this runs with (count, gz),
# its first C block the count.c it builds.
awk '/^```toml/{f=1;next} f&&/^```/{exit} f' "$CHECKOUT"/docs/workload.md > perflab.toml
mkdir -p src run && awk '/^```c$/{f=1;next} f&&/^```/{exit} f' "$CHECKOUT"/docs/workload.md > src/count.c
cat > bad.toml <<'TOML'
[workload.bad]
command = "true"
metrics = ['rate: (?P<r>[0-9.]+']
TOML
#: steps
cat bad.toml
perflab workload list --config bad.toml; echo $?
perflab workload path nope
perflab run -- sim-not-installed --events 5
