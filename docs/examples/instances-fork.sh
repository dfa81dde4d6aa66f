#!/usr/bin/env bash
#: page docs/instances.md
#: steps
#: show from '^fork-master at equal work'
perflab instances -w minihlt --fork-master --n 2 --policy none --reps 10 -- --events 20
