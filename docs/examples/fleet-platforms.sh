#!/usr/bin/env bash
#: page docs/fleet.md
mkdir -p scripts && cp "$CHECKOUT"/scripts/slurm-local scripts/
#: steps
scripts/slurm-local start $PWD/cluster --platforms A:3,B:1:0.35 --slow node2=0.2
export SLURM_CONF=$PWD/cluster/slurm.conf
sinfo -N -o "%N %f %t"
perflab fleet submit farm --nodes 4 --db farm.db -- run --runs 10 --command-name loop -- sh -c 'i=0; while [ $i -lt 50000 ]; do i=$((i+1)); done'
#: hidden
for i in $(seq 120); do perflab fleet status farm --db farm.db | grep -q 'pending\|running' || break; sleep 5; done
perflab fleet report farm --db farm.db
#: cleanup
scripts/slurm-local stop $PWD/cluster >/dev/null 2>&1
