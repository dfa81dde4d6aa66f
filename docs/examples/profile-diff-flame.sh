#!/usr/bin/env bash
#: page docs/profile.md
mkdir -p src/perflab/kernels && cp -r "$CHECKOUT"/src/perflab/kernels/minihlt src/perflab/kernels/
#: steps
g++ -std=c++17 -O0 -g -fno-omit-frame-pointer -o minihlt-O0 src/perflab/kernels/minihlt/*.cpp -lm
g++ -std=c++17 -O2 -g -fno-omit-frame-pointer -o minihlt-O2 src/perflab/kernels/minihlt/*.cpp -lm
#: show head-tail 0 2
perflab profile --call-graph fp --repeat 3 --annotate 0 --threshold 5 -- ./minihlt-O2 --events 30 --static-mb 16
#: show head-tail 0 2
perflab profile --call-graph fp --repeat 3 --annotate 0 --threshold 5 -- ./minihlt-O0 --events 30 --static-mb 16
perflab profile diff 1 2 --top 4
perflab report 3 -o diff.html
