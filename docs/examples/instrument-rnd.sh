#!/usr/bin/env bash
#: page docs/instrument.md
cp "$CHECKOUT"/docs/examples/inputs/rnd.c rnd.c
#: steps
cat rnd.c
gcc -O1 -o rnd rnd.c
#: show matching '^│ \./rnd +│ (instructions|estimated_cycles|i1_misses) ' '^(not )?deterministic'
perflab run --instrument cachegrind --runs 3 -- ./rnd
