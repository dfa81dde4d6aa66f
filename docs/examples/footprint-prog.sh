#!/usr/bin/env bash
#: page docs/footprint.md
cp "$CHECKOUT"/docs/examples/inputs/prog.c prog.c
#: steps
cat prog.c
gcc -O2 -o prog prog.c -lm
mkdir data && seq 0 4999 > data/input.txt
perflab footprint --db fp.db -- ./prog
