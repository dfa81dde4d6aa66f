#!/usr/bin/env bash
#: page docs/run.md
#: steps
#: show matching '^energy:' '^(┏|┃|┡|└|│)' '^perflab: '
perflab run --energy auto --runs 5 -w minihlt-quick
perflab run --energy rapl --runs 5 -- sleep 0.1; echo $?
