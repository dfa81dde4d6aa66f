#!/usr/bin/env bash
#: page docs/baseline.md
mkdir -p docs/ci-example && cp "$CHECKOUT"/docs/ci-example/* docs/ci-example/
#: steps
cp docs/ci-example/perflab.toml docs/ci-example/trigger.c .
#: show matching '^perflab: '
perflab run --workload trigger --runs 20 --baseline-save main
perflab baseline list
perflab baseline show main
perflab baseline set release-1.0 1 --note "tag v1.0, commit 1a2b3c4"
perflab baseline list
perflab run --workload trigger --runs 20 > /dev/null
perflab baseline set main 2
perflab baseline rm release-1.0
