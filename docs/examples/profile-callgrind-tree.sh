#!/usr/bin/env bash
#: page docs/profile.md
mkdir -p src/perflab/kernels && cp -r "$CHECKOUT"/src/perflab/kernels/minihlt src/perflab/kernels/
#: steps
g++ -std=c++17 -O2 -g -o minihlt src/perflab/kernels/minihlt/*.cpp -lm
#: show without '^(callgrind.out|counts per source|/tmp/)'
perflab profile --instrument callgrind --threshold 8 --tree --prune 6 --export folded cg.folded -- ./minihlt --events 1 --static-mb 1
awk '{n += $NF} END {print NR " stacks, " n " instructions"}' cg.folded
