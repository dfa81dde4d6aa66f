#!/usr/bin/env bash
#: page docs/score.md
#: steps
#: block 1
#: show without '^repetition \d+/\d+ done$'
perflab score --suite minihlt
#: block 2
perflab score --campaign 1 --export hep-suite minihlt-score.json | tail -1
perflab import minihlt-score.json | grep '^score'
