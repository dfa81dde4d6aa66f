#!/usr/bin/env bash
#: page docs/run.md
#: steps
#: show matching "^(┏|┃|┡|└|│|ranked|  \d|warning: 'sh -c|perflab: results)"
perflab run --runs 10 --ignore-failure 'sleep 0.02' 'sh -c "sleep 0.01; exit 3"' 'sleep 0.01'
