#!/usr/bin/env bash
#: page docs/ci.md
#: steps
#: show matching '^perflab: baseline'
perflab run --runs 2 -n work --baseline-save main -- sleep 0.05
#: show matching '^(pass|FAIL|UNSURE|info|gate:|perflab: (warning|wrote|baseline))'
perflab run --runs 2 -n work --baseline main -- sleep 0.1
echo $?
