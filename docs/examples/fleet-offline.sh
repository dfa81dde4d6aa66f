#!/usr/bin/env bash
#: page docs/fleet.md
mkdir -p scripts && cp "$CHECKOUT"/scripts/slurm-local "$CHECKOUT"/scripts/pg-local scripts/
scripts/slurm-local start $PWD/cluster > /dev/null
export SLURM_CONF=$PWD/cluster/slurm.conf
#: steps
perflab fleet submit offline --nodes 2 --host-label edge --shards $PWD/shards --db fleet.db -- run --runs 5 -- sleep 0.05
#: hidden
for i in $(seq 120); do perflab fleet status offline --db fleet.db | grep -q 'pending\|running' || break; sleep 5; done
perflab fleet status offline --db fleet.db
perflab fleet collect offline --from $PWD/shards --db fleet.db
perflab fleet collect offline --from $PWD/shards --db fleet.db
perflab fleet status offline --db fleet.db
#: cleanup
scripts/slurm-local stop $PWD/cluster >/dev/null 2>&1; scripts/pg-local stop $PWD/pg >/dev/null 2>&1
