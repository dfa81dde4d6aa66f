#!/usr/bin/env bash
#: page docs/run.md
#: steps
#: show matching "^warning: 'jitter': --precision"
perflab run --precision 1% --max-runs 12 -n jitter -- sh -c 'sleep 0.0$(( $(od -An -N1 -tu1 /dev/urandom) % 5 + 2 ))'
perflab run --runs 5 --max-runs 3 -- true; echo $?
perflab run --reference nope 'sleep 0.1' 'sleep 0.2'
