#!/usr/bin/env bash
#: page docs/results.md
#: steps
perflab run --runs 200 -- sleep 0.01 > /dev/null 2>&1 &
sleep 0.3; perflab run --runs 1000 -- sleep 0.01 > /dev/null 2>&1 &
#: show without 'Killed'
sleep 1.2; kill -9 %1
#: show without 'Killed'
perflab results
perflab resume 2; echo $?
perflab resume | tail -1
#: cleanup
kill %2; wait
