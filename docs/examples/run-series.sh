#!/usr/bin/env bash
#: page docs/run.md
#: steps
#: show matching '^(\S.*: steady|  warm-up|  per-event|  event \d+ is|  the slowest|  profile it|  not steady|answer|ranked by)'
perflab run -w minihlt --runs 5
