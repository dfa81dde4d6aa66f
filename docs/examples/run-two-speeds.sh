#!/usr/bin/env bash
#: page docs/run.md
#: steps
perflab run --runs 30 -n coin -n steady --json r.json "sh -c 'if [ \$(( \$(od -An -N1 -tu1 /dev/urandom) % 2 )) = 0 ]; then sleep 0.05; else sleep 0.08; fi'" "sh -c 'od -An -N1 -tu1 /dev/urandom >/dev/null; sleep 0.065'"
jq -r .result.verdict r.json
