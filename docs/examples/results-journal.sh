#!/usr/bin/env bash
#: page docs/results.md
#: steps
#: show without 'Killed'
for i in 1 2 3; do perflab run --runs 2000 -- sleep 0.005 > /dev/null 2>&1 & done; sleep 3; kill -9 $(jobs -p); wait
#: show matching '^│ +\d' '^note: '
perflab results
perflab resume 2 | tail -1
#: show matching '^│ +\d' '^note: '
perflab results
