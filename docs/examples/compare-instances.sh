#!/usr/bin/env bash
#: page docs/compare.md
#: steps
perflab instances --max 2 -- sleep 0.05 > /dev/null; perflab instances --max 2 -- sleep 0.1 > /dev/null
#: show matching '^(┏|┃|┡|└|verdict|significant|note)' '^│ all' --rows 1
perflab compare 1 2
