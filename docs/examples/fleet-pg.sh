#!/usr/bin/env bash
#: page docs/fleet.md
mkdir -p scripts && cp "$CHECKOUT"/scripts/slurm-local "$CHECKOUT"/scripts/pg-local scripts/
#: steps
#: block 1
scripts/slurm-local start $PWD/cluster
export SLURM_CONF=$PWD/cluster/slurm.conf
DB=$(scripts/pg-local start $PWD/pg --password hunter2); echo $DB
#: block 2
perflab fleet submit farm --nodes 3 --host-label node --db $DB -- run -w minihlt-quick --runs 20
perflab fleet status farm --db $DB
#: hidden
for i in $(seq 240); do squeue -h -o '%i %T' | grep -q '^1_1 RUNNING' && break; sleep 0.5; done; sleep 2
#: block 3
scancel 1_1
#: hidden
for i in $(seq 60); do squeue -h -o %i | grep -q '^1_1$' || break; sleep 1; done
perflab fleet status farm --db $DB
perflab fleet resubmit farm --missing --db $DB
#: hidden
for i in $(seq 120); do perflab fleet status farm --db $DB | grep -q 'pending\|running' || break; sleep 5; done
perflab fleet status farm --db $DB
perflab fleet report farm --db $DB --json farm.json --html farm.html
grep -rl hunter2 perflab-fleet farm.json farm.html; echo $?
#: cleanup
scripts/slurm-local stop $PWD/cluster >/dev/null 2>&1; scripts/pg-local stop $PWD/pg >/dev/null 2>&1
