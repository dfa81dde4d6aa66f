#!/usr/bin/env bash
#: page docs/run.md
#: steps
#: show matching '^(┏|┃|┡|└|│|ranked|estimate|  \d|measured|comparison)'
perflab run --until-decided 'sleep 0.02' 'sleep 0.025'
