#!/usr/bin/env bash
#: page docs/report.md
#: steps
#: show without 'Killed'
perflab run --runs 3000 -- sleep 0.005 > /dev/null 2>&1 & sleep 3; kill -9 $!; wait
perflab report 1 -o r.md
