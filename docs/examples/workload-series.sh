#!/usr/bin/env bash
#: page docs/workload.md
cp "$CHECKOUT"/docs/examples/inputs/slowstart.py slowstart.py
cat > perflab.toml <<'EOF'
[workload.trig]
command = ["python3", "slowstart.py", "300"]
series = ['^event (?P<event>\d+)$']
EOF
#: steps
cat perflab.toml
#: show matching '^(\S.*: steady|  warm-up|  per-event|  event \d+ is|  the slowest|  profile it|  not steady|answer|ranked by)'
perflab run -w trig --runs 3 --primary-metric steady_rate
#: show matching '^(\S.*: steady|  warm-up|  per-event|  event \d+ is|  the slowest|  profile it|  not steady|answer|ranked by)'
perflab run -w trig --runs 3 --skip-events 20
