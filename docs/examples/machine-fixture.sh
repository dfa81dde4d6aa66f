#!/usr/bin/env bash
#: page docs/machine.md
mkdir -p tests/data/topologies && cp "$CHECKOUT"/tests/data/topologies/64amd64-4s2n4ca2co.tar.bz2 "$CHECKOUT"/tests/data/topologies/48amd64-4pa2n6c-sparse.tar.bz2 tests/data/topologies/
#: steps
#: block 1
mkdir -p topo
tar xjf tests/data/topologies/64amd64-4s2n4ca2co.tar.bz2 -C topo
#: show head-tail 40 0
perflab machine --root topo/64amd64-4s2n4ca2co
#: block 2
tar xjf tests/data/topologies/48amd64-4pa2n6c-sparse.tar.bz2 -C topo     # unpacks 48amd64-4d2n6c-sparse/
perflab machine --root topo/48amd64-4d2n6c-sparse --json | jq -c .topology.counts
