#!/usr/bin/env bash
#: page docs/instrument.md
cp "$CHECKOUT"/docs/examples/inputs/work.c work.c
#: steps
cat work.c
gcc -O1 -DLOOPS=200000 -o work work.c
#: show matching '^(cachegrind:|instrument:|deterministic|cost:|┏|┃|┡|└|│)'
perflab run --instrument cachegrind --runs 5 --metric '(?P<events>\d+) events' -- ./work
