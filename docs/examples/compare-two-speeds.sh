#!/usr/bin/env bash
#: page docs/compare.md
#: steps
perflab run --runs 30 --command-name job -- bash -c 'sleep 0.05' > /dev/null
perflab run --runs 30 --command-name job -- bash -c 'if [ $((RANDOM % 5)) -lt 2 ]; then sleep 0.1; else sleep 0.05; fi' > /dev/null
perflab compare 1 2
