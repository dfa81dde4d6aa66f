#!/usr/bin/env bash
#: page docs/run.md
#: steps
perflab run --runs 10 --metric 'score=(?P<score>[0-9.]+)' --primary-metric score -n fast -n slow "sh -c 'sleep 0.2; echo score=100'" "sh -c 'sleep 0.3; echo score=150'"
