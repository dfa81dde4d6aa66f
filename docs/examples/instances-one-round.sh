#!/usr/bin/env bash
#: page docs/instances.md
#: steps
#: show without '^round \d+/\d+ done$'
perflab instances -w minihlt-quick --n 1,2,3 --policy none --reps 1
