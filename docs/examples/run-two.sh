#!/usr/bin/env bash
#: page docs/run.md
#: steps
#: show matching "^(ranked by|  \d|warning: 'sleep 0.02' against)"
perflab run --runs 3 'sleep 0.01' 'sleep 0.02'
