#!/usr/bin/env bash
#: page docs/bundle.md
cp "$CHECKOUT"/docs/examples/inputs/prog.c prog.c
gcc -O2 -o prog prog.c -lm && mkdir data && seq 0 4999 > data/input.txt
#: steps
perflab bundle -o prog.tar.gz --budget 1MiB -- ./prog
perflab bundle -o prog.tar.gz -- ./prog
perflab bundle verify prog.tar.gz
