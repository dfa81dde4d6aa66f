#!/usr/bin/env bash
#: page docs/compare.md
#: steps
for i in 1 2 3 4 5 6; do perflab run --runs 10 -- sleep 0.05 > /dev/null; done
for i in 1 2 3; do perflab run --runs 10 -- sleep 0.06 > /dev/null; done
perflab compare 1,2,3 4,5,6
perflab compare 4,5,6 7,8,9
