#!/usr/bin/env bash
#: page docs/workload.md
mkdir -p tests/data && cp -r "$CHECKOUT"/tests/data/mycflags tests/data/
#: steps
#: show matching '^(o2|pgo): built' '^  pgo: ' '^verdict: '
perflab variants --build make --src tests/data/mycflags --exe prog -V o2='-O2' -V pgo='pgo -O2' -r 3 -- '{exe}' 100000
