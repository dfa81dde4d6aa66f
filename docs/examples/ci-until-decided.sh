#!/usr/bin/env bash
#: page docs/ci.md
#: steps
#: show matching '^perflab: baseline'
perflab run --runs 20 -n work --baseline-save main -- sleep 0.05
#: show matching '^(pass|FAIL|UNSURE|info|gate:|perflab: (warning|wrote|baseline))' '^measured until'
perflab run -n work --baseline main --fail-if 'median>+5%' --until-decided -- sleep 0.05
echo $?
#: show matching '^(pass|FAIL|UNSURE|info|gate:|perflab: (warning|wrote|baseline))' '^measured until'
perflab run -n work --baseline main --fail-if 'median>+5%' --until-decided -- sleep 0.06
echo $?
