#!/usr/bin/env bash
#: page docs/baseline.md
#: steps
#: block 1
for s in 0.100 0.101 0.102; do perflab run --runs 12 -n work --baseline-save main -- sleep $s > /dev/null; done
perflab run --runs 12 -n work -- sleep 0.110 > /dev/null
perflab baseline show main
perflab baseline set main 4 --fresh
perflab baseline show main
#: block 2
perflab baseline show release-1.0
perflab baseline set main 99
