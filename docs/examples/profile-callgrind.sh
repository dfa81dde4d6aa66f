#!/usr/bin/env bash
#: page docs/profile.md
mkdir -p src/perflab/kernels && cp -r "$CHECKOUT"/src/perflab/kernels/minihlt src/perflab/kernels/
#: steps
#: block 1
mkdir plain planted
cp src/perflab/kernels/minihlt/*.cpp src/perflab/kernels/minihlt/*.h plain/
cp plain/* planted/
sed -i 's/^void FieldMap::field(const double p\[3\], double out\[3\]) const {$/&\n    for (volatile int planted = 0; planted < 40; planted = planted + 1) {}/' planted/field.cpp
g++ -std=c++17 -O1 -g -o minihlt plain/*.cpp -lm
g++ -std=c++17 -O1 -g -o minihlt-planted planted/*.cpp -lm
#: block 2
perflab profile --instrument callgrind --repeat 2 --threshold 2 -- ./minihlt --events 1 --static-mb 1
#: show head-tail 0 2
perflab profile --instrument callgrind --repeat 2 --threshold 2 -- ./minihlt-planted --events 1 --static-mb 1
perflab profile diff 1 2 --top 5
#: block 3
perflab profile --instrument callgrind --event 1 --repeat 5 --threshold 4 -- ./minihlt --events 3 --static-mb 1
#: show head-tail 0 2
perflab profile --instrument callgrind --event 1 --repeat 5 --threshold 4 -- ./minihlt-planted --events 3 --static-mb 1
perflab profile diff 4 5 --top 6
#: show head-tail 0 2
perflab profile --instrument callgrind --event 1 --repeat 5 --threshold 4 -- ./minihlt --events 3 --static-mb 1
perflab profile diff 4 7 --top 4
#: block 4
perflab profile diff 4 7 --top 1 --min-effect 2
