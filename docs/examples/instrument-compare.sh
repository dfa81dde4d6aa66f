#!/usr/bin/env bash
#: page docs/instrument.md
cp "$CHECKOUT"/docs/examples/inputs/work.c work.c
#: steps
gcc -O1 -DLOOPS=200000 -o work work.c && perflab run --instrument cachegrind --runs 2 -- ./work > /dev/null
gcc -O1 -DLOOPS=201100 -o work work.c && perflab run --instrument cachegrind --runs 2 -- ./work > /dev/null
perflab compare 1 2
