#!/usr/bin/env bash
#: page README.md
mkdir -p scripts && cp "$CHECKOUT"/scripts/slurm-local scripts/
#: steps
scripts/slurm-local start $PWD/cluster
export SLURM_CONF=$PWD/cluster/slurm.conf
#: show matching '^fleet farm: submitted'
perflab fleet submit farm --nodes 3 --host-label node --db farm.db -- run -w minihlt-quick --runs 10
#: hidden
for i in $(seq 120); do perflab fleet status farm --db farm.db | grep -q 'pending\|running' || break; sleep 5; done
#: show matching '^│ node-' '^(no slow host|slow hosts|  node-\d)'
perflab fleet report farm --db farm.db
#: cleanup
scripts/slurm-local stop $PWD/cluster >/dev/null 2>&1
