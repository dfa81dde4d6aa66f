#!/usr/bin/env bash
#: page docs/ci.md
#: steps
perflab run --runs 12 -n work --baseline-save main -- sleep 0.100 > /dev/null
for s in 0.1030 0.1061 0.1093 0.1126 0.1159 0.1194; do perflab run --runs 12 -n work --baseline main --baseline-save main -- sleep $s > out.txt 2>&1; echo "sleep $s exit $?: $(grep -E '^(pass|FAIL|UNSURE) wall' out.txt)"; done
