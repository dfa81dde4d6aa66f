#!/usr/bin/env bash
#: page docs/profile.md
#: steps
#: show without '^perf.data: '
perflab profile -w minihlt --event 42 --call-graph dwarf --repeat 3 --annotate 0 --threshold 6 --tree --prune 4 --export folded event42.folded --export speedscope event42.json
awk '{n += $NF} END {print NR " stacks, " n " samples"}' event42.folded
python3 -c "import json; d = json.load(open('event42.json')); print(d['profiles'][0]['type'], len(d['shared']['frames']), 'frames', sum(d['profiles'][0]['weights']), 'samples')"
