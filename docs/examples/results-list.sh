#!/usr/bin/env bash
#: page docs/results.md
#: steps
perflab cores --rounds 3 --min-rounds 3 --span 0 -- sleep 0.01 > /dev/null
for i in $(seq 8); do perflab run --runs 10 -- sleep 0.06 > /dev/null; done
perflab results --last 3
perflab results 1
