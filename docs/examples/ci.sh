#!/usr/bin/env bash
#: page docs/ci.md
# docs/ci.md's pipeline run by hand: one session told in six blocks.
mkdir -p docs/ci-example && cp "$CHECKOUT"/docs/ci-example/* docs/ci-example/
#: steps
#: block 1
mkdir ci-demo && cp docs/ci-example/perflab.toml docs/ci-example/trigger.c ci-demo/ && cd ci-demo
cat perflab.toml
#: block 2
perflab run --workload trigger --runs 20 --baseline-save main
#: block 3
#: show matching '^(pass|FAIL|UNSURE|info|gate:|perflab: (warning|wrote|baseline))'
perflab run --workload trigger --runs 20 --baseline main --fail-if 'median>+3%' --fail-if 'user>+3%' --fail-if 'events_per_s<-3%'
echo $?
#: block 4
sed -i 's/define WORK_PER_EVENT 1000000/define WORK_PER_EVENT 1080000/' trigger.c
#: show matching '^(pass|FAIL|UNSURE|info|gate:|perflab: (warning|wrote|baseline))'
perflab run --workload trigger --runs 20 --baseline main --fail-if 'median>+3%' --fail-if 'user>+3%' --fail-if 'events_per_s<-3%' --junit gate.xml --gate-markdown gate.md --gate-json gate.json
echo $?
#: block 5
cat gate.md
#: block 6
grep -c '<testcase' gate.xml; grep -o '<failure message="[^"]*"' gate.xml
