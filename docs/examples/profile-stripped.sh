#!/usr/bin/env bash
#: page docs/profile.md
mkdir -p src/perflab/kernels && cp -r "$CHECKOUT"/src/perflab/kernels/minihlt src/perflab/kernels/
#: steps
g++ -std=c++17 -O2 -s -o minihlt-stripped src/perflab/kernels/minihlt/*.cpp -lm
perflab profile --annotate 0 -- ./minihlt-stripped --events 20 --static-mb 16
