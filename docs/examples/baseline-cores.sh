#!/usr/bin/env bash
#: page docs/baseline.md
#: steps
#: show matching '^perflab: baseline'
perflab cores --rounds 3 --min-rounds 3 --span 0 --baseline-save nightly -- sleep 0.01
perflab cores --rounds 3 --min-rounds 3 --span 0 -- sleep 0.01 > /dev/null
#: show matching '^(pass|FAIL|UNSURE) wall time \[s\] of (all|cpu=0)' '^gate: '
perflab compare --baseline nightly 2 --fail-if 'median>+400%'
