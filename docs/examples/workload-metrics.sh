#!/usr/bin/env bash
#: page docs/workload.md
cp "$CHECKOUT"/docs/examples/inputs/enc.toml perflab.toml
#: steps
cat perflab.toml
#: show matching '^│ enc ' '^warning: metric regex'
perflab run --runs 3 -w enc --metric 'frames=(?P<frames>\d+)' --primary-metric frames --higher-is-better
perflab run --runs 3 -w enc --primary-metric nps
