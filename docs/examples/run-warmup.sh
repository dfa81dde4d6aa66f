#!/usr/bin/env bash
#: page docs/run.md
cp "$CHECKOUT"/docs/examples/inputs/slowstart.py slowstart.py
#: steps
cat slowstart.py
#: show matching '^(\S.*: steady|  warm-up|  per-event|  event \d+ is|  the slowest|  profile it|  not steady|answer|ranked by)'
perflab run --runs 3 --series '^event (?P<event>\d+)$' -- python3 slowstart.py 200
