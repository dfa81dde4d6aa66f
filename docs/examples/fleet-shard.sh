#!/usr/bin/env bash
#: page docs/fleet.md
mkdir -p scripts && cp "$CHECKOUT"/scripts/slurm-local "$CHECKOUT"/scripts/pg-local scripts/
scripts/slurm-local start $PWD/cluster > /dev/null
export SLURM_CONF=$PWD/cluster/slurm.conf
#: steps
export PERFLAB_DB_RETRY_S=3
DB=$(scripts/pg-local start $PWD/pg)
perflab fleet submit farm --nodes 2 --host-label node --db $DB -- run --runs 8 --command-name nap -- sleep 0.3
#: hidden
for i in $(seq 240); do squeue -h -o '%i %T' | grep -q '^1_1 RUNNING' && break; sleep 0.5; done; sleep 1
scripts/pg-local stop $PWD/pg
#: hidden
for i in $(seq 120); do [ -z "$(squeue -h)" ] && break; sleep 1; done
tail -qn1 perflab-fleet/farm/*.out
scripts/pg-local start $PWD/pg
perflab fleet status farm --db $DB
perflab fleet collect farm --db $DB
perflab fleet collect farm --db $DB
perflab fleet report farm --db $DB
#: cleanup
scripts/slurm-local stop $PWD/cluster >/dev/null 2>&1; scripts/pg-local stop $PWD/pg >/dev/null 2>&1
