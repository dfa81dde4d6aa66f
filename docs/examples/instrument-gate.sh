#!/usr/bin/env bash
#: page docs/instrument.md
cp "$CHECKOUT"/docs/examples/inputs/work.c work.c
#: steps
gcc -O1 -DLOOPS=200000 -o work work.c
#: show matching '^perflab: baseline'
perflab run --instrument cachegrind --runs 2 --baseline-save main -- ./work
gcc -O1 -DLOOPS=202200 -o work work.c
#: show matching '^(pass|FAIL|UNSURE) (instructions|estimated)' '^gate: '
perflab run --instrument cachegrind --runs 2 --baseline main --fail-if 'instructions>+0.5%' --fail-if 'estimated_cycles>+1%' -- ./work
